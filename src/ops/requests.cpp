// Requests made of several port requests (requests.hpp), and nothing more: they pass the
// replies on and decide nothing of a lock.
#include "ops/requests.hpp"

#include <boost/asio/post.hpp>

#include <algorithm>
#include <unordered_map>
#include <vector>

namespace zklock::detail {

namespace {

// The listings of one session: those asked for and not sent yet, and how many are in flight, by
// path (a session may list thousands of lock paths at once: one lock per resource).
class listing_batches final : public session_observer, public std::enable_shared_from_this<listing_batches> {
public:
    void list(const session_ptr& s, const std::string& dir, listing_cb cb)
    {
        if (!subscribed_) {
            subscribed_ = true;
            s->subscribe(weak_from_this());
        }
        if (auto it = open_.find(dir); it != open_.end()) {
            it->second->waiters.push_back(std::move(cb));
            return;
        }
        auto b = std::make_shared<batch>();
        b->dir = dir;
        b->waiters.push_back(std::move(cb));
        // Nothing of this path in flight (an uncontended acquire): at once, right behind the
        // create. Else the listing waits for the handlers already queued, which may ask for it too.
        if (!in_flight_.contains(dir)) return send(s, b);
        open_.emplace(dir, b);
        asio::post(s->executor(), [s, b] { s->extension<listing_batches>().send(s, b); });
    }

    void on_session_state(session_state, std::uint64_t) override {}
    void on_presumed_expired() override {}
    void on_shutdown(graveyard& g) override
    {
        // (The posted send holds its batch: Asio destroys that.)
        for (auto& [dir, b] : open_) {
            for (auto& w : b->waiters) g.bury(std::move(w));
            b->waiters.clear();
        }
        open_.clear();
    }

private:
    struct batch {
        std::string dir;
        std::vector<listing_cb> waiters;
    };

    void send(const session_ptr& s, const std::shared_ptr<batch>& b)
    {
        if (auto it = open_.find(b->dir); it != open_.end() && it->second == b) open_.erase(it);
        ++in_flight_[b->dir];
        s->list_children(b->dir, [s, b](error_code ec, child_names names) {
            auto& f = s->extension<listing_batches>().in_flight_;
            if (auto it = f.find(b->dir); it != f.end() && --it->second == 0) f.erase(it);
            auto l = ec ? std::make_shared<const listing>() : std::make_shared<const listing>(std::move(names.buffer), names.ends);
            if (!ec) s->metrics().listing(l->children());
            for (auto& w : b->waiters) w(ec, l);
        });
    }

    std::unordered_map<std::string, std::shared_ptr<batch>> open_;  // not sent yet
    std::unordered_map<std::string, std::size_t> in_flight_;        // sent, not answered
    bool subscribed_ = false;
};

// Creates `dir` as a container; if its parent is missing, the parent first (the same way), then
// `dir` again. Bottom-up, so that a lock under an existing parent costs one create, not one per
// path component. `attempts` bounds the retries when a parent vanishes again (the server's
// container cleanup) between its creation and ours.
void create_container_up(const session_ptr& s, std::string dir, int attempts, void_cb cb)
{
    s->create(dir, {}, create_mode::container,
              [s, dir, attempts, cb = std::move(cb)](error_code ec, std::string, zklock::stat) mutable {
                  if (!ec || ec == zk_errc::node_exists) return cb({});
                  if (ec != zk_errc::no_node) return cb(ec);
                  const std::size_t slash = dir.rfind('/');
                  // The first component's parent is "/", which always exists, unless "/" is a
                  // chroot (the server list's "/app", prefixed by the C client) that does not.
                  if (slash == 0 || slash == std::string::npos) return cb(errc::chroot_missing);
                  if (attempts <= 0) return cb(ec);
                  std::string parent = dir.substr(0, slash);
                  create_container_up(s, std::move(parent), attempts - 1,
                                      [s, dir = std::move(dir), attempts, cb = std::move(cb)](error_code pec) mutable {
                                          if (pec) return cb(pec);
                                          create_container_up(s, std::move(dir), attempts - 1, std::move(cb));
                                      });
              });
}

}  // namespace

void list_queue(const session_ptr& s, const std::string& dir, listing_cb cb)
{
    s->extension<listing_batches>().list(s, dir, std::move(cb));
}

void create_containers(const session_ptr& s, const std::string& dir, void_cb cb)
{
    // Every component may need a create and a retry; a few more for parents removed meanwhile.
    const auto depth = static_cast<int>(std::count(dir.begin(), dir.end(), '/'));
    create_container_up(s, dir, 2 * depth + 4, std::move(cb));
}

void check_chroot(zk_port& s, void_cb cb)
{
    s.exists("/", nullptr, [cb = std::move(cb)](error_code ec, std::optional<zklock::stat> st) mutable {
        cb(ec ? ec : st ? error_code{} : error_code(errc::chroot_missing));
    });
}

}  // namespace zklock::detail
