#include <zklock/zklock.hpp>

#include <boost/asio/io_context.hpp>

int main()
{
    boost::asio::io_context ioc;
    zklock::session zk{ioc, {.servers = "127.0.0.1:1"}};
    zklock::mutex m{zk, "/locks/consumer"};
    return zk.state() == zklock::session_state::disconnected && m.path() == "/locks/consumer" ? 0 : 1;
}
