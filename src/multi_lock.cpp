// multi_lock: the single acquires in canonical order, as one coroutine.
#include "deadline.hpp"
#include "handler_util.hpp"
#include "session_impl.hpp"

#include <zklock/detail/acquire_fwd.hpp>
#include <zklock/multi_lock.hpp>
#include <zklock/semaphore.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <numeric>

namespace zklock::detail {

namespace {

using result = std::pair<error_code, std::vector<lease>>;
using clock = std::chrono::steady_clock;

result failed(error_code ec) { return result(ec, std::vector<lease>()); }

template <class Token>
auto acquire_one(const session_ptr& s, const lock_spec& spec, const lock_options& o, bool try_only,
                 std::optional<clock::duration> t, Token&& token)
{
    queue_policy policy{spec.type == lock_spec::kind::shared   ? node_kind::shared
                        : spec.type == lock_spec::kind::permit ? node_kind::permit
                                                               : node_kind::exclusive,
                        spec.permits, spec.type == lock_spec::kind::writer};
    acquire_request req{spec.path, policy, try_only, t, o.owner_info};
    return asio::async_initiate<Token, void(error_code, lease)>(
        [](auto h, session_ptr sp, acquire_request r) {
            if (r.policy.kind == node_kind::permit) initiate_semaphore_acquire(std::move(sp), std::move(r), std::move(h));
            else initiate_acquire(std::move(sp), std::move(r), std::move(h));
        },
        token, s, std::move(req));
}

asio::awaitable<result> acquire_all(session_ptr s, std::vector<lock_spec> specs, lock_options o,
                                    std::optional<clock::duration> timeout)
{
    // Honour every cancellation type (each single acquire undoes itself; we undo the rest), and
    // keep awaiting the releases after a cancellation.
    co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
    co_await asio::this_coro::throw_if_cancelled(false);

    std::vector<std::size_t> order(specs.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return std::tie(specs[a].path, specs[a].type) < std::tie(specs[b].path, specs[b].type);
    });
    std::vector<lease> taken(specs.size());
    if (specs.empty()) co_return failed(errc::invalid_argument);
    for (std::size_t i = 1; i < order.size(); ++i)
        if (specs[order[i]].path == specs[order[i - 1]].path) co_return failed(errc::invalid_argument);

    // A timeout <= 0 means "try once", as for the single locks: each lock is tried once, all or
    // nothing. Otherwise one deadline (saturated: duration::max() never overflows) covers the set.
    const bool try_only = timeout && *timeout <= clock::duration::zero();
    const auto deadline = timeout && !try_only ? std::optional(deadline_after(*timeout)) : std::nullopt;
    error_code failure;
    for (std::size_t idx : order) {
        std::optional<clock::duration> left;
        if (deadline) {
            left = time_left(*deadline);
            if (*left <= clock::duration::zero()) {
                failure = errc::timeout;
                break;
            }
        }
        if ((co_await asio::this_coro::cancellation_state).cancelled() != asio::cancellation_type::none) {
            failure = asio::error::operation_aborted;
            break;
        }
        auto [ec, l] = co_await acquire_one(s, specs[idx], o, try_only, left, asio::as_tuple(asio::use_awaitable));
        if (ec) {
            failure = ec;
            break;
        }
        taken[idx] = std::move(l);
    }
    if (!failure) co_return result(error_code(), std::move(taken));
    for (auto& l : taken)
        if (l.owns_lock()) co_await l.async_release(asio::as_tuple(asio::use_awaitable));
    co_return failed(failure);
}

}  // namespace

void initiate_multi_acquire(session_ptr s, std::vector<lock_spec> specs, lock_options options,
                            std::optional<clock::duration> timeout, handler<error_code, std::vector<lease>> h)
{
    auto slot = asio::get_associated_cancellation_slot(h);
    auto sh = std::make_shared<stored_handler<error_code, std::vector<lease>>>(std::move(h), s->executor());
    auto ex = s->executor();
    asio::co_spawn(ex, acquire_all(std::move(s), std::move(specs), std::move(options), timeout),
                   asio::bind_cancellation_slot(slot, [sh](std::exception_ptr e, result r) {
                       if (e) {
                           try {
                               std::rethrow_exception(e);
                           } catch (const boost::system::system_error& se) {
                               return sh->complete(se.code(), std::vector<lease>());
                           } catch (...) {
                               return sh->complete(errc::invalid_argument, std::vector<lease>());
                           }
                       }
                       sh->complete(r.first, std::move(r.second));
                   }));
}

}  // namespace zklock::detail
