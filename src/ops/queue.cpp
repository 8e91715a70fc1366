// async_list_queue and the public path helpers, and nothing more: the listing's step machine
// (ops/read_machines.hpp) started for the user, and the queue as the acquiring side sees it.
#include "core/handler_util.hpp"
#include "ops/read_machines.hpp"

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

void list_queue_machine::start(zk_steps& out)
{
    if (auto ec = validate_lock_path(path_)) return finish(ec);
    out.get_data(path_data, path_);
    out.get_children(listing, path_);
}

void list_queue_machine::resume(zk_steps& out, zk_outcome r)
{
    if (done_) return;
    switch (r.tag) {
    case path_data: {
        const std::string_view prefix = "zklock-semaphore permits=";
        const std::string& data = r.data;
        if (r.ec || !data.starts_with(prefix)) return;
        std::uint32_t n = 0;
        auto [end, err] = std::from_chars(data.data() + prefix.size(), data.data() + data.size(), n);
        if (err == std::errc() && end == data.data() + data.size() && data == permit_count_data(n)) out_.permits = n;
        return;
    }
    case listing:
        if (r.ec == zk_errc::no_node) return out.check_chroot(chroot);
        if (r.ec) return finish(r.ec);
        return on_children(out, r.children);
    case chroot: return finish(r.ec == errc::chroot_missing ? r.ec : error_code(zk_errc::no_node));
    default: {
        const std::size_t i = r.tag - node_data;
        if (i >= out_.entries.size()) return;
        auto& entry = out_.entries[i];
        if (r.ec == zk_errc::no_node) entry.gone = true;
        else if (r.ec) return finish(r.ec);
        entry.data = std::move(r.data);
        entry.stat = r.stat;
        if (--pending_ == 0) finish({});
    }
    }
}

void list_queue_machine::cancel(zk_steps&, error_code why) { finish(why); }

void list_queue_machine::on_children(zk_steps& out, const std::vector<std::string>& children)
{
    queue_ = make_queue(children);
    out_.other_children = children.size() - queue_.size();
    out_.entries.resize(queue_.size());
    for (std::size_t i = 0; i < queue_.size(); ++i) {
        auto& e = out_.entries[i];
        e.name = queue_[i].name;
        e.kind = queue_[i].kind;
        e.library = queue_[i].library;
        e.recipe = queue_[i].what->name;
        e.sequence = queue_[i].seq;
        ++pending_;
        out.get_data(node_data + static_cast<std::uint32_t>(i), join_path(path_, e.name));
    }
    if (pending_ == 0) finish({});
}

void list_queue_machine::finish(error_code ec)
{
    if (done_) return;
    done_ = true;
    ec_ = ec;
    if (ec) {
        out_ = {};
        return;
    }
    // The rule every participant applies (evaluate): an exclusive node holds at the head, a
    // shared one while no exclusive node is before it, a permit while fewer than `permits` permit
    // nodes are before it.
    for (std::size_t i = 0; i < queue_.size(); ++i) {
        auto& e = out_.entries[i];
        if (queue_[i].kind == node_kind::permit && out_.permits == 0) e.status = queue_entry::state::unknown;
        else if (evaluate(queue_, i, queue_policy{queue_[i].kind, std::max<std::uint32_t>(out_.permits, 1)}).acquired)
            e.status = queue_entry::state::holder;
        else e.status = queue_entry::state::waiting;
    }
}

void initiate_list_queue(session_ptr s, std::string path, handler<error_code, queue_listing> h)
{
    if (!s) return post_without_session(std::move(h), error_code(errc::session_closed), queue_listing());  // a moved-from session
    machine_op<list_queue_machine>::launch(std::move(s), list_queue_machine(std::move(path)), std::move(h));
}

}  // namespace zklock::detail
