// A lease's I/O, and nothing more: its node's watch, the guarded write and the release, each done
// as lease_fsm (its status, its loss, a revocation) and the lease's step machines
// (ops/lease_machines.hpp) decide.
#include "core/executor_check.hpp"
#include "ops/lease_machines.hpp"
#include "ops/lease_state.hpp"
#include "ops/queue_hints.hpp"

#include <zklock/detail/acquire_fsm.hpp>
#include <zklock/detail/recipe.hpp>

#include <boost/asio/cancellation_type.hpp>
#include <cassert>

namespace zklock {

const char* to_string(lease_status s) noexcept
{
    switch (s) {
    case lease_status::held: return "held";
    case lease_status::suspended: return "suspended";
    case lease_status::lost: return "lost";
    case lease_status::released: return "released";
    }
    return "unknown";
}

}  // namespace zklock

namespace zklock::detail {

namespace {
// The node's session is over (from the server, or as the session object reports it): the node
// went with it.
bool session_over(const error_code& ec) noexcept
{
    return ec == condition::session_ended;
}
}  // namespace

lease_state::lease_state(session_ptr s, std::string node, std::int64_t token, std::uint64_t generation,
                         std::string mark_dir, std::chrono::steady_clock::time_point granted)
    : s_(std::move(s)), node_(std::move(node)), token_(token), generation_(generation), mark_dir_(std::move(mark_dir)),
      fsm_(generation), granted_(granted)
{
}

void lease_state::report_end(error_code lost_reason)
{
    if (reported_end_) return;
    reported_end_ = true;
    const auto slash = node_.rfind('/');
    s_->metrics().lease_ended(node_.substr(0, slash == 0 ? 1 : slash), std::chrono::steady_clock::now() - granted_,
                              lost_reason);
}

void lease_state::start(std::shared_ptr<watch_state> adopted, bool revoke_seen)
{
    if (revoke_seen) fsm_.revoke_seen();
    if (adopted) {
        node_watch_ = std::move(adopted);
        arm_node_watch();
    }
}

void lease_state::ensure_watch()
{
    if (node_watch_ || !fsm_.holds()) return;
    watch_node();
}

void lease_state::watch_node()
{
    // A data watch on our own node: a deletion by anyone but us (an operator, a bug) becomes
    // lock_lost, and a revocation request written into the node's data is seen.
    auto w = node_watch_ = s_->make_watch();
    std::weak_ptr<lease_state> weak = weak_from_this();
    s_->get_data(node_, w, [weak, w](error_code ec, std::string data, zklock::stat) {
        auto self = weak.lock();
        if (!self || self->node_watch_ != w) return;
        if (!ec) return self->apply(self->fsm_.node_data(data));
        self->node_watch_.reset();  // no watch was set
        if (ec == zk_errc::no_node) return self->set_lost(errc::lock_lost);
        if (is_retryable(ec)) {  // again once connected (an expiry reaches us through on_session_state)
            self->s_->wait_connected(self->generation_, [weak](error_code ec2) {
                if (auto self2 = weak.lock(); self2 && !ec2 && self2->has_waiters()) self2->ensure_watch();
            });
        }
    });
    arm_node_watch();
}

void lease_state::arm_node_watch()
{
    // The callback is stored in the watch itself: it must not own the watch (a cycle that leaks
    // when the watch never fires) nor the lease. While it runs the watch is alive, so comparing
    // its address with node_watch_ is safe.
    std::weak_ptr<lease_state> weak = weak_from_this();
    node_watch_->wait([weak, w = node_watch_.get()](error_code ec, watch_event ev) {
        auto self = weak.lock();
        if (!self || ec || self->node_watch_.get() != w) return;  // session-wide losses arrive through on_session_state
        self->node_watch_.reset();
        if (!self->fsm_.holds()) return;
        if (ev.type == watch_event_type::deleted) return self->set_lost(errc::lock_lost);
        // The data changed (a revocation request, or any other write): read it and watch on,
        // if anyone is listening; if not, the next one to ask sets the watch again.
        if (self->has_waiters()) self->watch_node();
    });
}

bool lease_state::revocation_requested() const noexcept
{
    if (fsm_.revoke_requested()) return true;
    auto src = revoke_source_.lock();
    return src && src->revocation_requested();
}

void lease_state::wait_revocation(unique_function<void(error_code)> cb)
{
    revoke_waiters_.push_back(std::move(cb));
    if (local_release_) return follow_revocation();
    ensure_watch();
}

void lease_state::follow_revocation()
{
    auto src = revoke_source_.lock();
    if (following_revocation_ || !src) return;
    following_revocation_ = true;
    src->wait_revocation([weak = weak_from_this()](error_code ec) {
        auto self = weak.lock();
        if (!self) return;
        self->following_revocation_ = false;
        // A loss of the cohort's node reaches us through lose(); its release, only once every
        // local holder has released.
        if (!ec) self->apply(self->fsm_.revoked());
    });
}

void lease_state::apply(const lease_fsm::change& c)
{
    const auto dir = [this] {
        const auto slash = node_.rfind('/');
        return std::string_view(node_).substr(0, slash == 0 ? 1 : slash);
    };
    if (c.released) {
        report_end({});
        auto lost = std::move(lost_waiters_);
        lost_waiters_.clear();
        for (auto& w : lost) w(asio::error::operation_aborted);
        auto revoke = std::move(revoke_waiters_);
        revoke_waiters_.clear();
        for (auto& w : revoke) w(asio::error::operation_aborted);
        auto waiters = std::move(status_waiters_);
        status_waiters_.clear();
        for (auto& w : waiters) w({}, lease_status::released);
        return;
    }
    if (c.lost) {
        const auto reason = fsm_.lost_reason();
        const auto& log = s_->log();
        if (!reported_end_ && log.wants(log_level::warning))  // (a cohort's own node: its holders say it)
            log.event(log_level::warning, "lock lost: " + reason.message(), dir(), node_);
        report_end(reason);
    }
    if (c.status) {
        // The status this change made, to every waiter, whatever an earlier waiter does meanwhile.
        const auto st = fsm_.status();
        auto waiters = std::move(status_waiters_);
        status_waiters_.clear();
        for (auto& w : waiters) w({}, st);
    }
    if (c.lost) {
        const auto reason = fsm_.lost_reason();
        if (ZKLOCK_MUTANT(mutant::loss_untold, true, reason != errc::session_expired)) {
            auto waiters = std::move(lost_waiters_);
            lost_waiters_.clear();
            for (auto& w : waiters) w(reason);
        }
        auto revoke = std::move(revoke_waiters_);
        revoke_waiters_.clear();
        for (auto& w : revoke) w(reason);
    }
    if (ZKLOCK_MUTANT(mutant::revocation_unheard, c.revoked, false)) {
        if (!local_release_ && s_->log().wants(log_level::info))
            s_->log().event(log_level::info, "revocation requested: another client asks this holder to let go", dir(), node_);
        auto waiters = std::move(revoke_waiters_);
        revoke_waiters_.clear();
        for (auto& w : waiters) w({});
    }
}

void lease_state::set_lost(error_code reason) { apply(fsm_.lose(reason)); }

void lease_state::on_session_state(session_state st, std::uint64_t generation) { apply(fsm_.session_changed(st, generation)); }

void lease_state::on_presumed_expired() { take(fsm_.presumed_expired()); }

bool lease_state::on_granted(const session_reading& r)
{
    granted_valid_until_ = r.valid_until;
    const auto c = fsm_.granted(r.state, r.generation, r.presumed);
    if (c.never_held) set_unmetered();
    take(c);
    return fsm_.holds();
}

void lease_state::take(const lease_fsm::change& c)
{
    // Cleared first: whoever hears of the loss may release the lease from there.
    if (c.remove_plainly) mark_dir_.clear();
    apply(c);
    if (c.remove_plainly && fsm_.status() != lease_status::released) remove_node({});
}

void lease_state::on_shutdown(graveyard& g)
{
    for (auto& w : lost_waiters_) g.bury(std::move(w));
    lost_waiters_.clear();
    for (auto& w : status_waiters_) g.bury(std::move(w));
    status_waiters_.clear();
    for (auto& w : revoke_waiters_) g.bury(std::move(w));
    revoke_waiters_.clear();
    if (node_watch_) node_watch_->abandon(g);
}

void lease_state::release(unique_function<void(error_code)> cb)
{
    // Presumed expired before the session told us (read_now): lost first, the node deleted
    // plainly by this release.
    if (fsm_.holds() && s_->read_now().presumed) {
        mark_dir_.clear();
        apply(fsm_.presumed_expired());
    }
    const auto c = fsm_.release();
    if (!c.released) {
        if (cb) cb(errc::already_released);
        return;
    }
    apply(c);
    node_watch_.reset();
    if (local_release_) {
        // A cohort's local holder: the cohort hands the lock on (or deletes its node) and completes
        // `cb`, never inline.
        auto hook = std::move(local_release_);
        hook(std::move(cb));
        return;
    }
    remove_node(std::move(cb));
}

void remove_node_machine::start(zk_steps& out)
{
    if (mark_dir_.empty()) return out.remove(plain_delete, node_);
    std::vector<multi_op> ops;
    ops.reserve(2);
    ops.push_back(multi_op::set_data(mark_dir_, handoff_mark(base_name(node_))));
    ops.push_back(multi_op::remove(node_));
    out.multi(marked_delete, std::move(ops));
}

void remove_node_machine::resume(zk_steps& out, zk_outcome r)
{
    if (done_) return;
    switch (r.tag) {
    case marked_delete:
        if (!r.ec) return finish({});
        // Connection loss and the session's end: as for the delete (the same multi again once
        // connected: if it was applied, it now fails on our node, which is gone).
        if (is_retryable(r.ec) || r.ec == errc::not_connected || session_over(r.ec)) return on_removed(out, r.ec);
        if (r.results.size() == 2 && r.results[1].ec == zk_errc::no_node) return finish({});  // gone already
        mark_dir_.clear();  // the mark was refused (no_auth on the lock path...): delete plainly
        return start(out);
    case plain_delete: return on_removed(out, r.ec);
    case reconnect:
        if (r.ec) return finish({});  // the node's session is over, and the node with it
        return start(out);
    }
}

void remove_node_machine::on_removed(zk_steps& out, error_code ec)
{
    if (!ec || ec == zk_errc::no_node || session_over(ec)) return finish({});
    // Again once connected within the node's session; if that session is over, so is the node.
    if (is_retryable(ec) || ec == errc::not_connected) return out.wait_connected(reconnect, generation_);
    finish(ec);  // no_auth on a node someone re-ACLed: nothing more we can do
}

void remove_node_machine::finish(error_code ec)
{
    done_ = true;
    ec_ = ec;
}

void lease_state::remove_node(unique_function<void(error_code)> cb)
{
    // The mark by the latest listing of the lock path this session saw (0: it does not remember
    // the path's queue, it keeps a few).
    std::string mark_dir = mark_dir_;
    if (!mark_dir.empty() && !acquire_fsm::release_writes_mark(s_->extension<queue_hints>().hint(mark_dir))) mark_dir.clear();
    machine_op<remove_node_machine, internal_completion<error_code>>::launch_internal(
        s_, remove_node_machine(node_, generation_, std::move(mark_dir)), internal_completion<error_code>(std::move(cb)));
}

void lease_state::wait_lost(unique_function<void(error_code)> cb)
{
    lost_waiters_.push_back(std::move(cb));
    ensure_watch();
}

void lease_state::wait_status(unique_function<void(error_code, lease_status)> cb)
{
    status_waiters_.push_back(std::move(cb));
    ensure_watch();
}

namespace {

// Completes from the initiating function: posted (never inline) through the session's executor
// whenever the lease has one (released or lost leases keep it), so the handler runs there or on its
// own associated executor. Only a default-constructed or moved-from lease has no session: it posts
// through asio::system_executor on to the handler's associated executor (Asio 1.26 has no
// async_immediate to do better).
template <class... Args> void post_now(const std::shared_ptr<lease_state>& s, handler<Args...> h, Args... args)
{
    if (!s) return post_without_session(std::move(h), std::move(args)...);
    stored_handler<Args...> sh(std::move(h), s->session()->executor());
    sh.post(s->session()->executor(), std::move(args)...);
}

}  // namespace

void check_caller(const std::shared_ptr<lease_state>& l) noexcept
{
    if (l) check_caller_on(l->session().get());
}

asio::any_io_executor executor_of(const std::shared_ptr<lease_state>& l) noexcept
{
    return l ? l->session()->executor() : asio::any_io_executor(asio::system_executor());
}

void initiate_release(std::shared_ptr<lease_state> s, handler<error_code> h)
{
    if (!s || ZKLOCK_MUTANT(mutant::released_release_inline, s->status() == lease_status::released, false))
        return post_now<error_code>(s, std::move(h), errc::already_released);
    auto sh = std::make_shared<stored_handler<error_code>>(std::move(h), s->session()->executor());
    // Terminal and partial stop the wait, and the deletion goes on; total is ignored (a release
    // cannot be undone).
    allow_cancel(sh, s->session()->executor(), true);
    s->release([sh](error_code ec) {
        if (*sh) sh->complete(ec);
    });
}

namespace {

// What a write on a lease's node reports: our node gone means the lease is lost (unless it was
// released meanwhile); a session expiry took the ephemeral node with it, so nothing was applied.
error_code lease_write_error(lease_state& s, error_code ec, bool node_gone)
{
    if (node_gone) {
        s.node_gone();
        return s.status() == lease_status::released ? error_code(errc::already_released) : error_code(errc::lock_lost);
    }
    if (ec == zk_errc::session_expired) return errc::session_expired;
    return ec;
}

}  // namespace

void initiate_guarded_multi(std::shared_ptr<lease_state> s, std::vector<multi_op> ops,
                            handler<error_code, std::vector<multi_result>> h)
{
    using results = std::vector<multi_result>;
    // Refused before anything is sent: one result per op, each with the error.
    const auto refuse = [&](errc e) {
        results r(ops.size());
        for (auto& x : r) x.ec = e;
        post_now<error_code, results>(s, std::move(h), e, std::move(r));
    };
    const auto st = s ? s->status() : lease_status::released;
    if (st == lease_status::released) return refuse(errc::already_released);
    if (st == lease_status::lost) return refuse(errc::lock_lost);
    if (ops.empty()) return post_now<error_code, results>(s, std::move(h), errc::invalid_argument, {});
    // check(our node, any version) first, in the same transaction: the server applies the rest
    // only while our node exists, whatever this process believes about the lease.
    ops.insert(ops.begin(), multi_op::check(s->node(), -1));
    auto sh = std::make_shared<stored_handler<error_code, results>>(std::move(h), s->session()->executor());
    s->session()->multi(ops, [s, sh](error_code ec, results r) {
        // The session reports per-op results only when the server answered the transaction (else
        // each carries the request's error): a failed check means our node is gone.
        const bool node_gone = !r.empty() && r.front().ec == zk_errc::no_node;
        if (!r.empty()) r.erase(r.begin());
        ec = lease_write_error(*s, ec, node_gone);
        if (node_gone)
            for (auto& x : r) x.ec = ec;
        sh->complete(ec, std::move(r));
    });
}

void initiate_wait_lost(std::shared_ptr<lease_state> s, handler<error_code> h)
{
    // Released (or empty) at the call: nothing to wait for. (A wait pending when the lease is
    // released completes with operation_aborted instead.)
    const auto r = s ? s->snapshot() : lease::reading{};
    if (r.status == lease_status::released) return post_now<error_code>(s, std::move(h), errc::already_released);
    if (r.status == lease_status::lost) return post_now<error_code>(s, std::move(h), r.lost_reason);
    auto sh = std::make_shared<stored_handler<error_code>>(std::move(h), s->session()->executor());
    allow_cancel(sh, s->session()->executor());
    s->wait_lost([sh](error_code ec) {
        if (*sh) sh->complete(ec);
    });
}

void initiate_wait_revocation(std::shared_ptr<lease_state> s, handler<error_code> h)
{
    // Released (or empty) at the call, whatever was requested before: as async_wait_lost.
    const auto r = s ? s->snapshot() : lease::reading{};
    if (r.status == lease_status::released) return post_now<error_code>(s, std::move(h), errc::already_released);
    if (s->revocation_requested()) return post_now<error_code>(s, std::move(h), {});
    if (r.status == lease_status::lost) return post_now<error_code>(s, std::move(h), r.lost_reason);
    auto sh = std::make_shared<stored_handler<error_code>>(std::move(h), s->session()->executor());
    allow_cancel(sh, s->session()->executor());
    s->wait_revocation([sh](error_code ec) {
        if (*sh) sh->complete(ec);
    });
}

void initiate_wait_status(std::shared_ptr<lease_state> s, handler<error_code, lease_status> h)
{
    // Released (or empty): its status changes no more. Lost: only a release would change it, so
    // the wait ends at once with the loss, as async_wait_lost does.
    const auto r = s ? s->snapshot() : lease::reading{};
    if (r.status == lease_status::released)
        return post_now<error_code, lease_status>(s, std::move(h), errc::already_released, lease_status::released);
    if (r.status == lease_status::lost) return post_now<error_code, lease_status>(s, std::move(h), r.lost_reason, lease_status::lost);
    auto sh = std::make_shared<stored_handler<error_code, lease_status>>(std::move(h), s->session()->executor());
    allow_cancel(sh, s->session()->executor());
    s->wait_status([sh](error_code ec, lease_status st) {
        if (*sh) sh->complete(ec, st);
    });
}

}  // namespace zklock::detail

namespace zklock {

lease::lease(std::shared_ptr<detail::lease_state> s) noexcept : state_(std::move(s)) {}

lease& lease::operator=(lease&& other) noexcept
{
    if (this != &other) {
        // As the destructor: a lease that reads lost may still have its node (a presumed expiry
        // not told yet), which only the release deletes.
        if (state_ && state_->status() != lease_status::released) state_->release({});
        state_ = std::move(other.state_);
    }
    return *this;
}

lease::~lease()
{
    if (state_ && state_->status() != lease_status::released) state_->release({});
}

namespace {

// The queries read the session's state, which only its executor changes: a debug build checks
// that they are called there (see the class's thread safety).
void assert_on_executor([[maybe_unused]] const std::shared_ptr<detail::lease_state>& s) noexcept
{
    assert(!s || detail::running_on(s->session()->executor()));
}

}  // namespace

bool lease::owns_lock() const noexcept
{
    assert_on_executor(state_);
    if (!state_) return false;
    const auto st = state_->status();
    return st == lease_status::held || st == lease_status::suspended;
}

std::chrono::steady_clock::time_point lease::valid_until() const noexcept
{
    assert_on_executor(state_);
    return state_ ? state_->valid_until() : std::chrono::steady_clock::time_point::min();
}

lease_status lease::status() const noexcept
{
    assert_on_executor(state_);
    return state_ ? state_->status() : lease_status::released;
}
std::int64_t lease::fencing_token() const noexcept { return state_ ? state_->token() : 0; }
fence_token lease::fence() const noexcept
{
    return state_ ? fence_token{state_->token(), state_->local_seq()} : fence_token{};
}

const std::string& lease::node() const noexcept
{
    static const std::string empty;
    return state_ ? state_->node() : empty;
}

error_code lease::lost_reason() const noexcept
{
    assert_on_executor(state_);
    return state_ ? state_->lost_reason() : error_code{};
}

lease::reading lease::read() const noexcept
{
    assert_on_executor(state_);
    return state_ ? state_->snapshot() : reading{};
}

bool lease::revocation_requested() const noexcept { return state_ && state_->revocation_requested(); }

}  // namespace zklock

namespace zklock::detail {

void downgrade_machine::resume(zk_steps& out, zk_outcome r)
{
    if (done_) return;
    if (r.tag == read) {
        if (r.ec) return finish(r.ec);
        if (is_downgrade_mark(r.data)) return finish({});
        // A revocation request stands: as if it had replaced a mark written just before it.
        if (r.data == revocation_request) return finish({});
        return out.set_data(write, node_, downgrade_mark(r.data), r.stat.version);
    }
    if (r.ec == zk_errc::bad_version && ++tries_ < max_tries) return out.get_data(read, node_);
    finish(r.ec);
}

void initiate_downgrade(std::shared_ptr<lease_state> s, handler<error_code> h)
{
    const auto st = s ? s->status() : lease_status::released;
    if (st == lease_status::released) return post_now<error_code>(s, std::move(h), errc::already_released);
    if (st == lease_status::lost) return post_now<error_code>(s, std::move(h), errc::lock_lost);
    const auto node = parse_queue_view(base_name(s->node()));
    if (s->local_seq() != 0 || !node || node->what != &writer_recipe || node->library != lock_library::zklock)
        return post_now<error_code>(s, std::move(h), errc::invalid_argument);
    // The lease learns of a node found gone (lease_write_error) on the session's executor, before
    // the handler runs.
    auto sh = std::make_shared<stored_handler<error_code>>(std::move(h), s->session()->executor());
    auto session = s->session();
    auto path = s->node();
    machine_op<downgrade_machine, internal_completion<error_code>>::launch_internal(
        std::move(session), downgrade_machine(std::move(path)),
        internal_completion<error_code>([s = std::move(s), sh](error_code ec) {
            sh->complete(lease_write_error(*s, ec, ec == zk_errc::no_node));
        }));
}

}  // namespace zklock::detail
