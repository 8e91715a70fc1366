#include <zklock/error.hpp>

#include <boost/asio/error.hpp>
#include <boost/system/errc.hpp>

#include <doctest/doctest.h>

#include <system_error>

using namespace zklock;

TEST_CASE("error categories keep ZooKeeper's numbers and speak in sentences")
{
    error_code e = zk_errc::no_node;
    CHECK(e.value() == -101);
    CHECK(std::string(e.category().name()) == "zookeeper");
    CHECK(make_zk_error(-101) == zk_errc::no_node);
    CHECK_FALSE(make_zk_error(0));
    error_code t = errc::timeout;
    CHECK(std::string(t.category().name()) == "zklock");
    CHECK(t != boost::asio::error::operation_aborted);
    for (int v = 1; v <= static_cast<int>(errc::not_supported); ++v) {
        if (v == 13) continue;  // not used
        auto m = error_code(v, zklock_category()).message();
        CHECK(m.size() > 10);
        CHECK(m.back() == '.');
        CHECK(m.rfind("Unknown", 0) != 0);
    }
    // New codes go at the end: the numbers of the others never change.
    CHECK(static_cast<int>(errc::already_released) == 12);
    CHECK(error_code(13, zklock_category()).message().rfind("Unknown", 0) == 0);
    CHECK(static_cast<int>(errc::recipe_mismatch) == 14);
    CHECK(static_cast<int>(errc::request_too_large) == 15);
    CHECK(static_cast<int>(errc::not_zookeeper) == 18);
    CHECK(static_cast<int>(errc::unresolvable_host) == 19);
    CHECK(static_cast<int>(errc::chroot_missing) == 20);
    CHECK(static_cast<int>(errc::chroot_mismatch) == 21);
    CHECK(error_code(errc::unresolvable_host).message().find("resolve host name") != std::string::npos);
}

TEST_CASE("is_retryable classifies in one place")
{
    CHECK(is_retryable(zk_errc::connection_loss));
    CHECK(is_retryable(zk_errc::operation_timeout));
    CHECK(is_retryable(zk_errc::session_moved));
    CHECK_FALSE(is_retryable(zk_errc::session_expired));
    CHECK_FALSE(is_retryable(zk_errc::no_node));
    CHECK_FALSE(is_retryable(errc::timeout));
    CHECK_FALSE(is_retryable(error_code{}));
}

TEST_CASE("an expiry matches condition::session_expired from either category, a close condition::session_closed")
{
    using boost::system::error_condition;
    for (error_code e : {error_code(errc::session_expired), error_code(zk_errc::session_expired)}) {
        CAPTURE(e.message());
        CHECK(e == condition::session_expired);
        CHECK(condition::session_expired == e);
        CHECK(e == condition::session_ended);
        CHECK(e != condition::session_closed);
        CHECK_FALSE(e != condition::session_expired);
    }
    for (error_code e : {error_code(errc::session_closed), error_code(zk_errc::closing)}) {
        CAPTURE(e.message());
        CHECK(e == condition::session_closed);
        CHECK(e == condition::session_ended);
        CHECK(e != condition::session_expired);
    }
    // Nothing else matches, and the codes of the two categories stay distinct.
    for (error_code e : {error_code{}, error_code(errc::lock_lost), error_code(errc::timeout),
                         error_code(zk_errc::connection_loss), error_code(zk_errc::no_node),
                         error_code(boost::asio::error::operation_aborted),
                         error_code(-112, boost::system::generic_category()), error_code(errc::already_released)}) {
        CAPTURE(e.message());
        CHECK(e != condition::session_expired);
        CHECK(e != condition::session_closed);
        CHECK(e != condition::session_ended);
    }
    CHECK(error_code(errc::session_expired) != error_code(zk_errc::session_expired));
    const error_condition c = condition::session_expired;
    CHECK(std::string(c.category().name()) == "zklock.condition");
    for (auto k : {condition::session_expired, condition::session_closed, condition::session_ended}) {
        auto m = error_condition(k).message();
        CHECK(m.size() > 10);
        CHECK(m.back() == '.');
    }
    // The std:: view of the codes (std::error_code converted from ours) agrees.
    CHECK(std::error_code(error_code(zk_errc::session_expired)) == std::error_condition(error_condition(condition::session_expired)));
}

TEST_CASE("zklock codes with a portable meaning compare equal to std::errc and boost::system::errc")
{
    namespace bse = boost::system::errc;
    const std::pair<errc, std::errc> portable[] = {
        {errc::timeout, std::errc::timed_out},
        {errc::connect_timeout, std::errc::timed_out},
        {errc::would_block, std::errc::operation_would_block},
        {errc::not_connected, std::errc::not_connected},
        {errc::invalid_path, std::errc::invalid_argument},
        {errc::invalid_servers, std::errc::invalid_argument},
        {errc::invalid_argument, std::errc::invalid_argument},
        {errc::not_supported, std::errc::not_supported},
    };
    for (auto [z, s] : portable) {
        const error_code e = z;
        CAPTURE(e.message());
        CHECK(e == s);
        CHECK(e == static_cast<bse::errc_t>(static_cast<int>(s)));
        CHECK(std::error_code(e) == s);
        CHECK(e.default_error_condition() == bse::make_error_condition(static_cast<bse::errc_t>(static_cast<int>(s))));
        // Still its own code: the message and category are zklock's.
        CHECK(std::string(e.category().name()) == "zklock");
        CHECK(e != boost::system::error_code(static_cast<int>(s), boost::system::generic_category()));
    }
    CHECK(error_code(errc::timeout) == bse::timed_out);
    CHECK(error_code(errc::timeout) == std::errc::timed_out);
    // The others compare equal to no portable condition they do not mean.
    for (errc z : {errc::lock_lost, errc::session_expired, errc::session_closed, errc::permit_mismatch,
                   errc::already_released, errc::recipe_mismatch, errc::request_too_large, errc::no_leader}) {
        const error_code e = z;
        CAPTURE(e.message());
        for (std::errc s : {std::errc::timed_out, std::errc::invalid_argument, std::errc::operation_would_block,
                            std::errc::not_connected, std::errc::not_supported})
            CHECK(e != s);
        CHECK(e.default_error_condition() == boost::system::error_condition(static_cast<int>(z), zklock_category()));
    }
    // A deadline is not a cancellation.
    CHECK(error_code(errc::timeout) != std::errc::operation_canceled);
    CHECK(error_code(errc::timeout) != boost::asio::error::operation_aborted);
}
