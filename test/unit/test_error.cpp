#include <zklock/error.hpp>

#include <boost/asio/error.hpp>

#include <doctest/doctest.h>

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
        auto m = error_code(v, zklock_category()).message();
        CHECK(m.size() > 10);
        CHECK(m.back() == '.');
        CHECK(m.rfind("Unknown", 0) != 0);
    }
    // New codes go at the end: the numbers of the others never change.
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
