// The session's table of watches (bridge/watch_table.hpp) and the shared path its entries and the
// watches' states hold (zklock/detail/shared_path.hpp), without a server.
#include "bridge/watch_table.hpp"

#include <zklock/detail/shared_path.hpp>

#include <boost/asio/io_context.hpp>

#include <doctest/doctest.h>

#include <string>
#include <vector>

using zklock::detail::shared_path;
using zklock::detail::watch_kind;
using zklock::detail::watch_state;
using zklock::detail::watch_table;

TEST_CASE("shared_path: one copy, shared, NUL-terminated")
{
    const shared_path empty;
    CHECK(empty.empty());
    CHECK(std::string(empty.c_str()).empty());
    const shared_path a(std::string_view("/lock/x-0000000000000001-0000000042"));
    CHECK(a == "/lock/x-0000000000000001-0000000042");
    CHECK(a.size() == 35);
    CHECK(a.c_str()[a.size()] == '\0');
    shared_path b = a;
    CHECK(b.c_str() == a.c_str());  // the same characters, not a copy
    shared_path c(a.view());
    CHECK(c == a);
    CHECK(c.c_str() != a.c_str());
    b.clear();
    CHECK(b.empty());
    CHECK(a == std::string("/lock/x-0000000000000001-0000000042"));  // the other holder keeps it
}

TEST_CASE("watch_table: the watches of a path fire in the order they were set, expired ones skipped")
{
    boost::asio::io_context io;
    const shared_path p(std::string_view("/lock/x-0000000000000001-0000000042"));
    watch_table t;
    std::vector<int> order;
    auto make = [&](int id) {
        auto w = std::make_shared<watch_state>(io.get_executor(), p);
        w->wait([&order, id](zklock::error_code ec, zklock::watch_event ev) {
            CHECK(ec == zklock::errc::session_expired);
            CHECK(ev.path == "/lock/x-0000000000000001-0000000042");
            order.push_back(id);
        });
        return w;
    };
    auto w1 = make(1);
    auto w2 = make(2);
    auto w3 = make(3);
    t.add(watch_kind::data, p.view(), w1);
    t.add(watch_kind::data, p.view(), w2);
    t.add(watch_kind::data, p.view(), w3);
    w2.reset();  // nobody holds it: gone
    auto w4 = make(4);
    t.add(watch_kind::data, p.view(), w4);
    w1.reset();  // the first place is free, but others are after it: w5 goes last
    auto w5 = make(5);
    t.add(watch_kind::data, "/lock/x-0000000000000001-0000000042", w5);  // named by a plain string: the entry keeps its copy
    auto other = std::make_shared<watch_state>(io.get_executor());
    t.add(watch_kind::data, "/lock/other", other);
    t.fail_all(zklock::errc::session_expired);  // (an event fires one path's entry the same way)
    CHECK(order == std::vector<int>{3, 4, 5});
    CHECK(w3->fired());
    CHECK(other->fired());
    // Fired and erased: nothing is left to fire.
    order.clear();
    auto w6 = make(6);
    t.fail_all(zklock::errc::session_expired);
    CHECK(order.empty());
    // A new entry for the path: its first place is taken again.
    t.add(watch_kind::data, p.view(), w6);
    t.fail_all(zklock::errc::session_expired);
    CHECK(order == std::vector<int>{6});
    CHECK(other->fired());
}
