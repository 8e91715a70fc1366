// The election's own operations (the leader, an observer, proclaim) as step machines on the
// runner (ops/machine.hpp), each deciding from its steps' outcomes only; the driving is the
// runner's, and the recipe constant is in src/recipes/election.cpp.
#include "core/handler_util.hpp"
#include "core/mutant.hpp"
#include "ops/lease_state.hpp"
#include "ops/read_machines.hpp"

#include <zklock/election.hpp>

namespace zklock::detail {

namespace {

// Errors after which a look is tried again once connected: the session is still there (or a new
// one follows an expiry).
bool try_again(const error_code& ec) noexcept
{
    return ec == zk_errc::connection_loss || ec == zk_errc::operation_timeout || ec == errc::not_connected ||
           ec == condition::session_expired;
}

leader_info make_info(const queue_node& n, std::string data, const zklock::stat& st)
{
    return leader_info{n.name, std::move(data), n.seq, n.library, st};
}

bool same_leader(const leader_info& a, const leader_info& b) noexcept { return a.node == b.node && a.value == b.value; }

}  // namespace

void leader_machine::start(zk_steps& out)
{
    if (auto ec = validate_lock_path(path_)) return finish(ec);
    out.get_children(listing, path_);
}

void leader_machine::resume(zk_steps& out, zk_outcome r)
{
    if (done_) return;
    switch (r.tag) {
    case listing:
        if (r.ec == zk_errc::no_node) return out.check_chroot(chroot);
        if (r.ec) return finish(r.ec);
        queue_ = make_queue(r.children);
        return look(out);
    case chroot: return finish(r.ec == errc::chroot_missing ? r.ec : error_code(errc::no_leader));
    case candidate:
        if (r.ec == zk_errc::no_node) {
            ++next_;
            return look(out);
        }
        if (r.ec) return finish(r.ec);
        return finish({}, make_info(queue_[next_], std::move(r.data), r.stat));
    }
}

void leader_machine::cancel(zk_steps&, error_code why) { finish(why); }

void leader_machine::look(zk_steps& out)
{
    if (next_ == queue_.size()) return finish(errc::no_leader);
    out.get_data(candidate, join_path(path_, queue_[next_].name));
}

void leader_machine::finish(error_code ec, leader_info info)
{
    if (done_) return;
    done_ = true;
    ec_ = ec;
    info_ = std::move(info);
}

void initiate_leader(session_ptr s, std::string path, handler<error_code, leader_info> h)
{
    // An election without a session (moved from, or made from a moved-from session).
    if (!s) return post_without_session(std::move(h), error_code(errc::session_closed), leader_info());
    machine_op<leader_machine>::launch(std::move(s), leader_machine(std::move(path)), std::move(h));
}

void initiate_proclaim(std::shared_ptr<lease_state> s, election_names names, std::string value, handler<error_code> h)
{
    // A candidate named for Curator's LeaderLatch: a LeaderLatch candidate waiting on it acts on
    // its deletion only, and does not watch again after another event (LeaderLatch's watcher).
    // A leadership that ended (resigned, empty, lost) says so first, as the guarded write would.
    const auto st = s ? s->status() : lease_status::released;
    if (names == election_names::curator_latch && (st == lease_status::held || st == lease_status::suspended)) {
        stored_handler<error_code> sh(std::move(h), s->session()->executor());
        return sh.post(s->session()->executor(), errc::not_supported);
    }
    std::vector<multi_op> ops;
    if (s) ops.push_back(multi_op::set_data(s->node(), std::move(value)));
    else ops.push_back(multi_op::check("/", -1));  // refused before it is sent: the lease is empty
    initiate_guarded_multi(std::move(s), std::move(ops),
                           mapped_handler{std::move(h), [](auto&& inner, error_code ec, std::vector<multi_result>) {
                               std::move(inner)(ec);
                           }});
}

void observer_machine::start(zk_steps& out)
{
    if (auto ec = validate_lock_path(path_)) return fail(ec);
    list(out);
}

void observer_machine::list(zk_steps& out)
{
    phase_ = phase::listing;
    out.get_children(next_tag(), path_, true);
}

void observer_machine::look(zk_steps& out)
{
    if (next_ == candidates_.size()) return list(out);
    phase_ = phase::candidate;
    out.get_data(next_tag(), join_path(path_, candidates_[next_].name), true);
}

void observer_machine::watch_path(zk_steps& out)
{
    publish({});
    phase_ = phase::path_exists;
    out.exists(next_tag(), path_, true);
}

void observer_machine::resume(zk_steps& out, zk_outcome r)
{
    if (phase_ == phase::ended || r.tag != tag_) return;
    // A watch's wait that failed (the session ended) is an error like a read's.
    if (r.ec && r.ec != zk_errc::no_node) return on_error(out, r.ec);
    switch (phase_) {
    case phase::listing:
        if (r.ec == zk_errc::no_node) {
            phase_ = phase::chroot;
            return out.check_chroot(next_tag());
        }
        candidates_ = make_queue(r.children);
        next_ = 0;
        if (!candidates_.empty()) return look(out);
        publish({});
        phase_ = phase::listing_watch;
        return out.wait_watch(tag_);
    case phase::listing_watch:
    case phase::path_watch: return list(out);
    case phase::chroot: return watch_path(out);
    case phase::path_exists:
        if (r.exists) return list(out);
        phase_ = phase::path_watch;
        return out.wait_watch(tag_);
    case phase::candidate:
        if (r.ec == zk_errc::no_node) {
            ++next_;
            return look(out);
        }
        publish(make_info(candidates_[next_], std::move(r.data), r.stat));
        phase_ = phase::candidate_watch;
        return out.wait_watch(tag_);
    case phase::candidate_watch:
        if (r.event.type == watch_event_type::deleted) ++next_;
        return look(out);  // deleted: the next one; changed: the new value
    case phase::reconnecting: return list(out);
    case phase::ended: return;
    }
}

void observer_machine::on_error(zk_steps& out, error_code ec)
{
    if (phase_ == phase::chroot && ec == errc::chroot_missing) return fail(ec);
    if (ZKLOCK_MUTANT(mutant::observer_ends_on_connection_loss, !try_again(ec), true) || phase_ == phase::reconnecting) return fail(ec);
    // Look again once connected: after a lost connection, the same session; after an expiry, the
    // new one (if the session makes one: else the wait says why not).
    phase_ = phase::reconnecting;
    out.wait_connected(next_tag());
}

void observer_machine::publish(leader_info info)
{
    if (seen_ && same_leader(info, current_)) return;
    seen_ = true;
    current_ = std::move(info);
}

bool observer_machine::has_news() const noexcept
{
    if (failed_) return true;
    return seen_ && !(delivered_any_ && same_leader(current_, delivered_));
}

std::pair<error_code, leader_info> observer_machine::take_news()
{
    if (failed_) return {failed_, leader_info{}};
    delivered_any_ = true;
    delivered_ = current_;
    return {error_code{}, current_};
}

void observer_machine::fail(error_code ec)
{
    failed_ = ec;
    phase_ = phase::ended;
}

// The observer's runner: performs its machine's steps and completes the one wait (next) with
// its news. It lives as long as its election_observer (its waits hold it weakly).
class observer_state final : public step_runner {
public:
    observer_state(session_ptr s, std::string path) : step_runner(std::move(s), held::by_owner), m_(std::move(path)) {}
    const zk_port* port() const noexcept { return s_.get(); }

    void start()
    {
        zk_steps out;
        m_.start(out);
        perform(out);
    }

    void next(handler<error_code, leader_info> h)
    {
        if (waiter_ && *waiter_) {
            stored_handler<error_code, leader_info> busy(std::move(h), s_->executor());
            return busy.post(s_->executor(), errc::operation_in_progress, leader_info{});
        }
        waiter_ = std::make_shared<stored_handler<error_code, leader_info>>(std::move(h), s_->executor());
        allow_cancel(waiter_, s_->executor());
        // Never inside the call: news already there is delivered from a posted handler.
        asio::post(s_->executor(), [weak = weak_from_this()] {
            if (auto self = weak.lock()) static_cast<observer_state&>(*self).deliver();
        });
    }

    void stop() noexcept
    {
        if (stopped_) return;
        stopped_ = true;
        drop_watch();
        if (waiter_ && *waiter_) waiter_->complete(asio::error::operation_aborted, leader_info{});
    }

private:
    void on_outcome(zk_outcome r) override
    {
        if (stopped_) return;
        zk_steps out;
        m_.resume(out, std::move(r));
        if (m_.failed()) drop_watch();
        perform(out);
        deliver();
    }

    void deliver()
    {
        if (!waiter_ || !*waiter_ || !m_.has_news()) return;
        auto [ec, info] = m_.take_news();
        waiter_->complete(ec, std::move(info));
    }

    observer_machine m_;
    bool stopped_ = false;
    std::shared_ptr<stored_handler<error_code, leader_info>> waiter_;
};

std::shared_ptr<observer_state> start_observer(session_ptr s, std::string path)
{
    if (!s) return nullptr;  // an election without a session: an empty observer
    auto o = std::make_shared<observer_state>(std::move(s), std::move(path));
    o->start();
    return o;
}

void check_caller(const std::shared_ptr<observer_state>& o) noexcept
{
    if (o) check_caller_on(o->port());
}

asio::any_io_executor executor_of(const std::shared_ptr<observer_state>& o) noexcept
{
    return o ? o->executor() : asio::any_io_executor(asio::system_executor());
}

void initiate_observe_next(std::shared_ptr<observer_state> o, handler<error_code, leader_info> h)
{
    if (!o) {
        stored_handler<error_code, leader_info> sh(std::move(h), asio::system_executor());
        return sh.post(asio::system_executor(), errc::invalid_argument, leader_info{});
    }
    o->next(std::move(h));
}

void stop_observer(observer_state& o) noexcept { o.stop(); }

}  // namespace zklock::detail
