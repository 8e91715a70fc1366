// Helpers shared by the operations' unit tests (test_ops_*.cpp) on the fake port: starting an
// acquire and answering an uncontended one.
#pragma once

#include "fake_port.hpp"

#include <zklock/detail/acquire_fwd.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>

namespace zklock::test_ops {

/// Answers an uncontended acquire's create and listing on `dir` (its node gets sequence `seq`);
/// returns the node.
inline std::string grant_alone(test::fake_port& port, const std::string& dir, int seq)
{
    REQUIRE(port.pending().size() >= 2);
    const std::string prefix = port.pending().front().path;
    REQUIRE(prefix.starts_with(dir + "/"));
    CHECK(port.pending().front().mode == create_mode::ephemeral_sequential);
    std::string s = std::to_string(seq);
    const std::string created = prefix + std::string(10 - s.size(), '0') + s;
    port.answer("create", prefix, {.path = created, .stat = {.czxid = 1000 + seq}});
    port.answer("list_children", dir, {.children = {std::string(detail::base_name(created))}});
    port.run();
    return created;
}

struct acquired {
    std::optional<error_code> ec;
    lease l;
};

inline detail::acquire_request mutex_request(const std::string& dir)
{
    return detail::acquire_request{std::make_shared<const std::string>(dir), detail::queue_policy{detail::mutex_recipe}};
}

inline void start_acquire(const std::shared_ptr<test::fake_port>& port, detail::acquire_request req, acquired& r,
                          boost::asio::cancellation_slot slot = {})
{
    detail::initiate_acquire(port, std::move(req), boost::asio::bind_cancellation_slot(slot, [&r](error_code ec, lease l) {
                                 r.ec = ec;
                                 r.l = std::move(l);
                             }));
}

inline void start_acquire(const std::shared_ptr<test::fake_port>& port, const std::string& dir, acquired& r,
                          boost::asio::cancellation_slot slot = {})
{
    start_acquire(port, mutex_request(dir), r, slot);
}

}  // namespace zklock::test_ops
