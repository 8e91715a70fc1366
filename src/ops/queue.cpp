// async_list_queue and the public path helpers: the queue as the acquiring side sees it.
#include "core/handler_util.hpp"
#include "ops/requests.hpp"

#include <zklock/detail/acquire_fsm.hpp>
#include <zklock/detail/path.hpp>
#include <zklock/queue.hpp>

#include <charconv>

namespace zklock {

error_code validate_lock_path(std::string_view path) noexcept { return detail::validate_lock_path(path); }
std::string_view explain_lock_path(std::string_view path) noexcept { return detail::lock_path_problem(path); }
error_code validate_servers(std::string_view servers) noexcept { return detail::validate_servers(servers); }

const char* to_string(lock_kind k) noexcept
{
    switch (k) {
    case lock_kind::exclusive: return "exclusive";
    case lock_kind::shared: return "shared";
    case lock_kind::permit: return "permit";
    }
    return "?";
}

const char* to_string(lock_library l) noexcept
{
    switch (l) {
    case lock_library::zklock: return "zklock";
    case lock_library::curator: return "curator";
    case lock_library::kazoo: return "kazoo";
    }
    return "?";
}

std::optional<std::int64_t> queue_sequence(std::string_view node) noexcept
{
    auto v = detail::parse_queue_view(detail::base_name(node));
    if (!v) return std::nullopt;
    return v->seq;
}

}  // namespace zklock

namespace zklock::detail {

namespace {

// One listing, then the path's data and every node's data, all in flight at once: a session's
// replies come in order, so the path's data is in before the listing, and the listing before the
// nodes' data.
class list_queue_op : public std::enable_shared_from_this<list_queue_op> {
public:
    list_queue_op(session_ptr s, std::string path, handler<error_code, queue_listing> h)
        : s_(std::move(s)), path_(std::move(path)), h_(std::move(h), s_->executor())
    {
    }

    void start()
    {
        if (auto ec = validate_lock_path(path_)) return h_.post(s_->executor(), ec, queue_listing{});
        on_cancellation(h_, s_->executor(), [weak = weak_from_this()] {
            if (auto self = weak.lock()) self->finish(asio::error::operation_aborted);
        });
        auto self = shared_from_this();
        s_->get_data(path_, nullptr, [self](error_code ec, std::string data, zklock::stat) {
            const std::string_view prefix = "zklock-semaphore permits=";
            if (ec || !data.starts_with(prefix)) return;
            std::uint32_t n = 0;
            auto [end, err] = std::from_chars(data.data() + prefix.size(), data.data() + data.size(), n);
            if (err == std::errc() && end == data.data() + data.size() && data == permit_count_data(n)) self->out_.permits = n;
        });
        s_->get_children(path_, nullptr, [self](error_code ec, std::vector<std::string> children) {
            if (ec == zk_errc::no_node) return self->check_chroot();
            if (ec) return self->finish(ec);
            self->on_children(children);
        });
    }

private:
    // No such path: is it the chroot that is missing?
    void check_chroot()
    {
        if (done_) return;
        detail::check_chroot(*s_, [self = shared_from_this()](error_code ec) {
            self->finish(ec == errc::chroot_missing ? ec : error_code(zk_errc::no_node));
        });
    }

    void on_children(const std::vector<std::string>& children)
    {
        if (done_) return;
        queue_ = make_queue(children);
        out_.other_children = children.size() - queue_.size();
        out_.entries.resize(queue_.size());
        auto self = shared_from_this();
        for (std::size_t i = 0; i < queue_.size(); ++i) {
            auto& e = out_.entries[i];
            e.name = queue_[i].name;
            e.kind = queue_[i].kind;
            e.library = queue_[i].library;
            e.recipe = queue_[i].what->name;
            e.sequence = queue_[i].seq;
            ++pending_;
            s_->get_data(join_path(path_, e.name), nullptr, [self, i](error_code ec, std::string data, zklock::stat st) {
                if (self->done_) return;
                auto& entry = self->out_.entries[i];
                if (ec == zk_errc::no_node) entry.gone = true;
                else if (ec) return self->finish(ec);
                entry.data = std::move(data);
                entry.stat = st;
                if (--self->pending_ == 0) self->finish({});
            });
        }
        if (pending_ == 0) finish({});
    }

    void finish(error_code ec)
    {
        if (done_) return;
        done_ = true;
        if (ec) return h_.complete(ec, queue_listing{});
        // The rule every participant applies (evaluate): an exclusive node holds at the head, a
        // shared one while no exclusive node is before it, a permit while fewer than `permits`
        // permit nodes are before it.
        for (std::size_t i = 0; i < queue_.size(); ++i) {
            auto& e = out_.entries[i];
            if (queue_[i].kind == node_kind::permit && out_.permits == 0) e.status = queue_entry::state::unknown;
            else if (evaluate(queue_, i, queue_policy{queue_[i].kind, std::max<std::uint32_t>(out_.permits, 1)}).acquired)
                e.status = queue_entry::state::holder;
            else e.status = queue_entry::state::waiting;
        }
        h_.complete({}, std::move(out_));
    }

    session_ptr s_;
    std::string path_;
    stored_handler<error_code, queue_listing> h_;
    std::vector<queue_node> queue_;
    queue_listing out_;
    std::size_t pending_ = 0;
    bool done_ = false;
};

}  // namespace

void initiate_list_queue(session_ptr s, std::string path, handler<error_code, queue_listing> h)
{
    std::make_shared<list_queue_op>(std::move(s), std::move(path), std::move(h))->start();
}

}  // namespace zklock::detail
