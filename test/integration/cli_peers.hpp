// What the `zklock` command-line tests put on the other side of its connection: nodes as other
// clients make and delete them, peers that are not ZooKeeper, a frozen server.
#pragma once

#include "../common.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <signal.h>
#include <sys/types.h>

namespace zklock::test::cli {

/// Deletes the one node under `path`, as another client would; the time just before.
inline awaitable<std::chrono::steady_clock::time_point> delete_only_node(session& zk, const std::string& path)
{
    const auto kids = co_await children_of(zk, path);
    REQUIRE(kids.size() == 1);
    const auto before = std::chrono::steady_clock::now();
    co_await zk.async_remove(path + "/" + kids[0]);
    co_return before;
}

/// The start of a node's name as Apache Curator (a protection prefix) and Kazoo (a UUID) make it.
inline const std::string curator_name = "_c_5e1c3b10-7f3a-4c4e-9a53-2f1d0c8a9b7e", kazoo_name = "4b1d3c1e2f8a4b6c9d0e1f2a3b4c5d6e";

/// Creates the ephemeral sequential node `prefix`NNN holding `data`, as Curator or Kazoo would; its path.
inline awaitable<std::string> create_foreign(session& zk, const std::string& prefix, const std::string& data)
{
    auto [ec, node, st] = co_await zk.async_create(prefix, data, create_mode::ephemeral_sequential, tuple);
    REQUIRE_FALSE(ec);
    co_return node;
}

/// A peer on 127.0.0.1 that is not ZooKeeper, served on the test's io_context: a silent one
/// accepts and never answers; an HTTP one answers whatever it reads with an HTTP error and keeps
/// the connection open, as a keep-alive HTTP server does. Destroying it closes everything.
class fake_peer {
public:
    fake_peer(asio::any_io_executor ex, bool http)
        : st_(std::make_shared<state>(asio::ip::tcp::acceptor(ex, {asio::ip::make_address("127.0.0.1"), 0}), http))
    {
        asio::co_spawn(ex, accept(st_), asio::detached);
    }
    ~fake_peer()
    {
        boost::system::error_code ec;
        st_->acceptor.close(ec);
        for (auto& c : st_->conns) c->close(ec);
    }
    fake_peer(const fake_peer&) = delete;
    fake_peer& operator=(const fake_peer&) = delete;

    std::string connect_string() const { return "127.0.0.1:" + std::to_string(st_->acceptor.local_endpoint().port()); }
    std::size_t connections() const { return st_->conns.size(); }

private:
    struct state {
        state(asio::ip::tcp::acceptor a, bool h) : acceptor(std::move(a)), http(h) {}
        asio::ip::tcp::acceptor acceptor;
        std::vector<std::shared_ptr<asio::ip::tcp::socket>> conns;
        bool http;
    };
    static awaitable<void> accept(std::shared_ptr<state> st)
    {
        for (;;) {
            auto sock = std::make_shared<asio::ip::tcp::socket>(st->acceptor.get_executor());
            auto [ec] = co_await st->acceptor.async_accept(*sock, tuple);
            if (ec) co_return;
            st->conns.push_back(sock);
            if (st->http) asio::co_spawn(st->acceptor.get_executor(), serve(sock), asio::detached);
        }
    }
    static awaitable<void> serve(std::shared_ptr<asio::ip::tcp::socket> sock)
    {
        static const std::string reply = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
        char buf[512];
        for (;;) {
            auto [ec, n] = co_await sock->async_read_some(asio::buffer(buf), tuple);
            if (ec) co_return;
            auto [wec, written] = co_await asio::async_write(*sock, asio::buffer(reply), tuple);
            if (wec) co_return;
        }
    }
    std::shared_ptr<state> st_;
};

/// Freezes a server (SIGSTOP: its sockets stay open, the kernel still accepts connections for it)
/// until thaw() or the end of the scope.
struct freeze {
    pid_t pid;
    explicit freeze(pid_t p) : pid(p)
    {
        REQUIRE(pid > 0);
        REQUIRE(::kill(pid, SIGSTOP) == 0);
    }
    ~freeze() { thaw(); }
    void thaw()
    {
        if (pid > 0) ::kill(std::exchange(pid, -1), SIGCONT);
    }
};

}  // namespace zklock::test::cli
