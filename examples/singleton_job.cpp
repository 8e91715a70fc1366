// One singleton job across a fleet of Asio servers: every instance campaigns in one election; the
// leader runs the job, the others wait their turn and say who leads. A plain Asio TCP server in
// each instance answers every connection with one line: who leads, and whether it is this one.
//
//   singleton_job [--instances K] [--seconds S] [--port P] [--path PATH]
//
// K instances run in this process, each with its own ZooKeeper session, as K servers would (one
// process keeps the demo to one command). Each leads for about a second, then resigns (or, every
// second time, its session closes, as a crash would): leadership passes in queue order. The job is
// a counter in ZooKeeper that only the leader bumps, through the leadership's guarded write, so a
// deposed leader can never bump it. At the end the demo checks that every bump came from the
// leader of the moment and that no two led at once, and exits 1 otherwise.
// Server list from $ZK_SERVERS (default 127.0.0.1:2181).
#include <zklock/zklock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using asio::awaitable;
using tcp = asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;

constexpr auto tuple = asio::as_tuple(asio::use_awaitable);

namespace {

struct settings {
    int instances = 3;
    int seconds = 4;
    unsigned short port = 0;  // 0: no TCP server
    std::string path = "/zklock-examples/singleton";
};

zklock::session_config config_from_env()
{
    const char* servers = std::getenv("ZK_SERVERS");
    zklock::session_config c;
    c.servers = servers ? servers : "127.0.0.1:2181";
    return c;
}

struct fleet_record {
    int leading = 0;       // instances that believe they lead, now
    int most_leading = 0;  // the most at any moment
    int handovers = 0;
    long bumps = 0;
};

// One server of the fleet.
class instance {
public:
    instance(asio::any_io_executor ex, const settings& cfg, int id, fleet_record& rec)
        : zk_(ex, config_from_env()), cfg_(cfg), name_("instance-" + std::to_string(id)), rec_(rec)
    {
    }

    zklock::session& session() { return zk_; }

    // Campaign, run the job while leading, give leadership up, campaign again; until `until`.
    awaitable<void> run(std::chrono::steady_clock::time_point until)
    {
        co_await zk_.async_connect();
        zklock::election e{zk_, cfg_.path};
        int term = 0;
        while (std::chrono::steady_clock::now() < until) {
            auto [ec, lead] = co_await e.async_campaign(name_, until - std::chrono::steady_clock::now(),
                                                        tuple);
            if (ec) break;  // the demo's time is up (errc::timeout), or the session is gone
            leading_ = true;
            rec_.most_leading = std::max(rec_.most_leading, ++rec_.leading);
            ++rec_.handovers;
            std::cout << name_ << " leads (fencing token " << lead.fencing_token() << ")\n";
            // The job runs until it ends or the leadership is lost, whichever comes first (as_tuple:
            // the loss completes the wait without an exception, so || cancels the job).
            const auto job_until = std::min(until, std::chrono::steady_clock::now() + 1s);
            co_await (job(lead, job_until) || lead.async_wait_lost(tuple));
            --rec_.leading;
            leading_ = false;
            if (++term % 2 == 0) {
                // As a crash would: the session ends without a resign, its candidate node goes with it.
                co_await zk_.async_close();
                co_return;
            }
            co_await lead.async_resign();
        }
        co_await zk_.async_close();
    }

    // The TCP server: one line per connection.
    awaitable<void> serve(tcp::acceptor& acceptor)
    {
        zklock::election e{zk_, cfg_.path};
        auto observer = e.observe();
        std::string leader = "(nobody)";
        asio::co_spawn(co_await asio::this_coro::executor, [&]() -> awaitable<void> {
            for (;;) {
                auto [ec, who] = co_await observer.async_next(tuple);
                if (ec) co_return;
                leader = who ? who.value : "(nobody)";
            }
        }, asio::detached);
        for (;;) {
            auto [ec, socket] = co_await acceptor.async_accept(tuple);
            if (ec) co_return;
            const std::string line = "leader " + leader + (leading_ ? " (this instance)\n" : "\n");
            co_await asio::async_write(socket, asio::buffer(line), tuple);
        }
    }

private:

    // The singleton job: bump the counter every 100 ms, each bump a guarded write that the server
    // applies only while our candidate node exists. run() cancels it when the leadership is lost.
    awaitable<void> job(zklock::leadership& lead, std::chrono::steady_clock::time_point until)
    {
        const std::string counter = cfg_.path + "-counter";
        asio::steady_timer t{co_await asio::this_coro::executor};
        while (std::chrono::steady_clock::now() < until) {
            auto [ec, data, st] = co_await zk_.async_get_data(counter, tuple);
            if (ec) break;
            const long next = std::atol(data.c_str()) + 1;
            // (A named vector: GCC 12 mishandles a braced temporary inside a co_await expression.)
            std::vector<zklock::multi_op> ops{zklock::multi_op::set_data(counter, std::to_string(next), st.version)};
            auto [wec, results] = co_await lead.async_guarded_multi(std::move(ops), tuple);
            if (wec == zklock::errc::lock_lost || wec == zklock::errc::session_expired) break;  // deposed
            if (!wec) ++rec_.bumps;
            t.expires_after(100ms);
            co_await t.async_wait(asio::use_awaitable);
        }
    }

    zklock::session zk_;
    const settings& cfg_;
    std::string name_;
    fleet_record& rec_;
    bool leading_ = false;
};

awaitable<int> demo(settings cfg)
{
    auto ex = co_await asio::this_coro::executor;
    fleet_record rec;
    std::vector<std::unique_ptr<instance>> fleet;
    for (int i = 0; i < cfg.instances; ++i) fleet.push_back(std::make_unique<instance>(ex, cfg, i, rec));

    // The counter the job bumps.
    auto& zk = fleet.front()->session();
    co_await zk.async_connect();
    // (Each component of the path, then the counter; "already exists" is fine.)
    for (std::size_t slash = cfg.path.find('/', 1); slash != std::string::npos; slash = cfg.path.find('/', slash + 1))
        co_await zk.async_create(cfg.path.substr(0, slash), "", zklock::create_mode::persistent, tuple);
    co_await zk.async_create(cfg.path + "-counter", "0", zklock::create_mode::persistent, tuple);
    co_await zk.async_set_data(cfg.path + "-counter", "0", -1, tuple);

    std::unique_ptr<tcp::acceptor> acceptor;
    if (cfg.port != 0) {
        acceptor = std::make_unique<tcp::acceptor>(ex, tcp::endpoint(asio::ip::make_address("127.0.0.1"), cfg.port));
        asio::co_spawn(ex, fleet.front()->serve(*acceptor), asio::detached);
    }

    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(cfg.seconds);
    int finished = 0;
    for (auto& i : fleet) asio::co_spawn(ex, i->run(until), [&](std::exception_ptr) { ++finished; });
    asio::steady_timer t{ex};
    while (finished < cfg.instances) {
        t.expires_after(50ms);
        co_await t.async_wait(asio::use_awaitable);
    }
    if (acceptor) acceptor->close();

    // Read through a fresh session: the first instance's may be closed by now.
    zklock::session reader{ex, config_from_env()};
    co_await reader.async_connect();
    auto [ec, data, st] = co_await reader.async_get_data(cfg.path + "-counter", tuple);
    co_await reader.async_close();
    const long stored = ec ? -1 : std::atol(data.c_str());
    std::cout << rec.handovers << " terms, " << rec.bumps << " job runs, counter " << stored << ", at most "
              << rec.most_leading << " leader at a time\n";
    co_return rec.most_leading == 1 && stored == rec.bumps && rec.handovers >= 2 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv)
{
    settings cfg;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string flag = argv[i];
        if (flag == "--instances") cfg.instances = std::max(1, std::atoi(argv[i + 1]));
        else if (flag == "--seconds") cfg.seconds = std::max(1, std::atoi(argv[i + 1]));
        else if (flag == "--port") cfg.port = static_cast<unsigned short>(std::atoi(argv[i + 1]));
        else if (flag == "--path") cfg.path = argv[i + 1];
        else {
            std::cerr << "usage: singleton_job [--instances K] [--seconds S] [--port P] [--path PATH]\n";
            return 64;
        }
    }
    asio::io_context ioc;
    int status = 1;
    asio::co_spawn(ioc, demo(cfg), [&](std::exception_ptr e, int s) {
        try {
            if (e) std::rethrow_exception(e);
            status = s;
        } catch (const std::exception& ex) {
            std::cerr << "singleton_job: " << ex.what() << "\n";
        }
    });
    ioc.run();
    return status;
}
