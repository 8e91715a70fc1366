#include "support/fault_proxy.hpp"

#include "support/frame_scanner.hpp"

#include <boost/asio.hpp>

#include <array>
#include <atomic>
#include <cstdio>
#include <future>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

namespace zklock::test {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using boost::system::error_code;

namespace {

enum class mode { pass, delay, blackhole };

// QuorumCnxManager's InitialMessage: long protocol version, long sid, int length, address.
constexpr std::int64_t initial_message_v1 = -65536;
constexpr std::int64_t initial_message_v2 = -65535;
constexpr std::size_t initial_message_fixed = 8 + 8 + 4;
constexpr std::size_t initial_message_max_address = 2048;  // QuorumCnxManager.maxBuffer

std::uint64_t big_endian(const std::vector<std::uint8_t>& data, std::size_t at, std::size_t bytes)
{
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < bytes; ++i) v = v << 8 | data[at + i];
    return v;
}

// Replaces the address of the InitialMessage at the start of `data` with `address`, keeping
// what follows the message. Returns false while `data` is only the start of an InitialMessage;
// true once it is rewritten, or right away if `data` does not start with one (then unchanged).
bool rewrite_initial_message(std::vector<std::uint8_t>& data, const std::string& address)
{
    if (data.size() < 8) return false;
    const auto version = static_cast<std::int64_t>(big_endian(data, 0, 8));
    if (version != initial_message_v1 && version != initial_message_v2) return true;
    if (data.size() < initial_message_fixed) return false;
    const auto length = static_cast<std::int32_t>(big_endian(data, 16, 4));
    if (length <= 0 || static_cast<std::size_t>(length) > initial_message_max_address) return true;
    const std::size_t end = initial_message_fixed + static_cast<std::size_t>(length);
    if (data.size() < end) return false;

    std::vector<std::uint8_t> out(data.begin(), data.begin() + 16);  // version, sid
    const auto new_length = static_cast<std::uint32_t>(address.size());
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<std::uint8_t>(new_length >> shift));
    out.insert(out.end(), address.begin(), address.end());
    out.insert(out.end(), data.begin() + static_cast<std::ptrdiff_t>(end), data.end());
    data = std::move(out);
    return true;
}

}  // namespace

struct fault_proxy::impl {
    struct session;

    asio::io_context ioc;
    asio::executor_work_guard<asio::io_context::executor_type> work = asio::make_work_guard(ioc);
    tcp::acceptor acceptor{ioc};
    std::uint16_t port = 0;
    std::atomic<std::uint16_t> target;
    std::atomic<std::size_t> replies_dropped{0};
    std::atomic<std::size_t> connections_accepted{0};
    std::thread thread;

    // Used on the io thread only.
    mode current = mode::pass;
    std::chrono::milliseconds delay{0};
    std::chrono::milliseconds connect_retry{0};
    std::function<bool(std::int32_t, std::int32_t)> drop_match;
    std::string election_address;  // for rewrite_election_address(); empty: off
    std::set<std::shared_ptr<session>> sessions;

    explicit impl(std::uint16_t target_port) : target(target_port) {}

    void accept();
    void resume_all();
    void reset_all();

    // Runs f on the io thread and waits for it, so a fault is in force when its setter returns.
    template <class F>
    void run_sync(F f)
    {
        if (ioc.get_executor().running_in_this_thread()) return f();
        std::promise<void> done;
        asio::post(ioc, [&] {
            try {
                f();
                done.set_value();
            } catch (...) {
                done.set_exception(std::current_exception());
            }
        });
        done.get_future().get();
    }
};

// One proxied connection: two pipes (client->server, server->client), each a loop of
// read -> [delay] -> scan frames -> write, parked while blackholed.
struct fault_proxy::impl::session : std::enable_shared_from_this<session> {
    struct pipe {
        tcp::socket& from;
        tcp::socket& to;
        frame_scanner scanner;
        asio::steady_timer timer;
        std::array<std::uint8_t, 16384> buf{};
        std::vector<std::uint8_t> chunk{};  // read, not yet delivered
        std::vector<std::uint8_t> held{};   // start of a reply header, held back until we know its xid
        std::vector<std::uint8_t> out{};    // being written
        bool eof = false;                   // `from` sent FIN: forward it after `chunk`
        bool parked = false;
        bool done = false;
    };

    impl& proxy;
    tcp::socket client;
    tcp::socket server;
    pipe up{client, server, frame_scanner(8), asio::steady_timer(proxy.ioc)};
    pipe down{server, client, frame_scanner(4), asio::steady_timer(proxy.ioc)};
    std::optional<std::int32_t> drop_xid;
    std::string election_address;          // announced in the InitialMessage; empty once it passed
    std::vector<std::uint8_t> initial{};   // the InitialMessage read so far
    bool connect_parked = false;
    std::chrono::milliseconds connect_retry{0};
    std::chrono::steady_clock::time_point connect_until{};  // no retry of a failed connect after this
    bool closed = false;

    session(impl& p, tcp::socket s) : proxy(p), client(std::move(s)), server(p.ioc) {}

    void start()
    {
        proxy.sessions.insert(shared_from_this());
        election_address = proxy.election_address;
        connect_retry = proxy.connect_retry;
        error_code ec;
        client.set_option(tcp::no_delay(true), ec);
        if (proxy.current == mode::blackhole)
            connect_parked = true;
        else
            first_connect();
    }

    void first_connect()
    {
        connect_until = std::chrono::steady_clock::now() + connect_retry;
        connect();
    }

    void connect()
    {
        const tcp::endpoint ep(asio::ip::address_v4::loopback(), proxy.target.load());
        server.async_connect(ep, [self = shared_from_this()](error_code ec) {
            if (self->closed) return;
            if (ec) return self->retry_connect();
            self->server.set_option(tcp::no_delay(true), ec);
            self->read(self->up);
            self->read(self->down);
        });
    }

    // The upstream connect failed: tries again in 50 ms if that is before connect_until (parked
    // instead while blackholed), else resets the client.
    void retry_connect()
    {
        constexpr auto interval = std::chrono::milliseconds(50);
        if (std::chrono::steady_clock::now() + interval > connect_until) return abort();
        error_code ec;
        server.close(ec);
        up.timer.expires_after(interval);
        up.timer.async_wait([self = shared_from_this()](error_code ec) {
            if (self->closed || ec) return;
            if (self->proxy.current == mode::blackhole)
                self->connect_parked = true;
            else
                self->connect();
        });
    }

    void read(pipe& p)
    {
        if (proxy.current == mode::blackhole) {
            p.parked = true;
            return;
        }
        p.from.async_read_some(asio::buffer(p.buf), [self = shared_from_this(), &p](error_code ec, std::size_t n) {
            if (self->closed) return;
            if (ec == asio::error::eof)
                p.eof = true;
            else if (ec)
                return self->abort();
            p.chunk.assign(p.buf.begin(), p.buf.begin() + static_cast<std::ptrdiff_t>(n));
            self->on_chunk(p);
        });
    }

    void on_chunk(pipe& p)
    {
        if (proxy.current == mode::delay && proxy.delay.count() > 0) {
            p.timer.expires_after(proxy.delay);
            p.timer.async_wait([self = shared_from_this(), &p](error_code ec) {
                if (!self->closed && !ec) self->deliver(p);
            });
        } else {
            deliver(p);
        }
    }

    // Client -> server: everything is forwarded; remembers the xid of a request drop_match picks.
    void scan_requests()
    {
        up.scanner.scan(up.chunk, [&](const frame_header& h) {
            if (!h.first && h.fields >= 8 && proxy.drop_match && proxy.drop_match(h.xid, h.type)) {
                proxy.drop_match = nullptr;
                drop_xid = h.xid;
            }
            return false;
        });
        up.out = std::exchange(up.chunk, {});
    }

    // Server -> client: forwards up to the reply to drop (returns true if it came). While one
    // is awaited, a reply header split across reads is held back until its xid is known.
    bool scan_replies()
    {
        std::vector<std::uint8_t> data = std::exchange(down.held, {});
        if (!data.empty()) down.scanner.rewind_partial();
        data.insert(data.end(), down.chunk.begin(), down.chunk.end());
        down.chunk.clear();
        const auto r = down.scanner.scan(data, [&](const frame_header& h) {
            return !h.first && h.fields >= 4 && drop_xid && h.xid == *drop_xid;
        });
        std::size_t forward = data.size();
        if (r.stopped) {
            forward = r.frame_start;
            drop_xid.reset();
            ++proxy.replies_dropped;
        } else if (drop_xid) {
            forward -= down.scanner.partial();
            down.held.assign(data.begin() + static_cast<std::ptrdiff_t>(forward), data.end());
        }
        data.resize(forward);
        down.out = std::move(data);
        return r.stopped;
    }

    // Client -> server, while an election address is to be announced: collects the connection's
    // first bytes until they hold the whole InitialMessage (or the client sent FIN), then puts
    // them, rewritten, back into up.chunk. Returns false while more must be read.
    bool take_initial_message()
    {
        if (election_address.empty()) return true;
        initial.insert(initial.end(), up.chunk.begin(), up.chunk.end());
        up.chunk.clear();
        if (!rewrite_initial_message(initial, election_address) && !up.eof) return false;
        up.chunk = std::exchange(initial, {});
        election_address.clear();
        return true;
    }

    void deliver(pipe& p)
    {
        if (proxy.current == mode::blackhole) {
            p.parked = true;
            return;
        }
        if (&p == &up && !take_initial_message()) return read(p);
        bool drop = false;
        if (&p == &up)
            scan_requests();
        else
            drop = scan_replies();
        if (p.eof) {
            p.out.insert(p.out.end(), p.held.begin(), p.held.end());
            p.held.clear();
        }
        asio::async_write(p.to, asio::buffer(p.out), [self = shared_from_this(), &p, drop](error_code ec, std::size_t) {
            if (self->closed) return;
            if (ec || drop) return self->abort();
            if (!p.eof) return self->read(p);
            p.to.shutdown(tcp::socket::shutdown_send, ec);
            p.done = true;
            if (self->up.done && self->down.done) self->close();
        });
    }

    void resume()
    {
        if (closed) return;
        if (connect_parked) {
            connect_parked = false;
            return first_connect();
        }
        for (pipe* p : {&up, &down}) {
            if (!p->parked) continue;
            p->parked = false;
            if (p->chunk.empty() && !p->eof)
                read(*p);
            else
                deliver(*p);
        }
    }

    void abort() { close(true); }

    void close(bool rst = false)
    {
        if (closed) return;
        closed = true;
        for (tcp::socket* s : {&client, &server}) {
            error_code ec;
            if (rst && s->is_open()) s->set_option(asio::socket_base::linger(true, 0), ec);
            s->close(ec);
        }
        up.timer.cancel();
        down.timer.cancel();
        proxy.sessions.erase(shared_from_this());
    }
};

void fault_proxy::impl::accept()
{
    acceptor.async_accept([this](error_code ec, tcp::socket s) {
        if (!acceptor.is_open()) return;
        if (!ec) {
            ++connections_accepted;
            std::make_shared<session>(*this, std::move(s))->start();
        }
        accept();
    });
}

void fault_proxy::impl::resume_all()
{
    const auto all = sessions;  // resume() may close sessions
    for (const auto& s : all) s->resume();
}

void fault_proxy::impl::reset_all()
{
    const auto all = sessions;  // abort() erases from sessions
    for (const auto& s : all) s->abort();
}

fault_proxy::fault_proxy(std::uint16_t target_port) : impl_(std::make_unique<impl>(target_port))
{
    const tcp::endpoint ep(asio::ip::address_v4::loopback(), 0);
    impl_->acceptor.open(ep.protocol());
    impl_->acceptor.bind(ep);
    impl_->acceptor.listen();
    impl_->port = impl_->acceptor.local_endpoint().port();
    impl_->accept();
    impl_->thread = std::thread([this] {
        for (;;) {
            try {
                impl_->ioc.run();
                return;
            } catch (const std::exception& e) {
                std::fprintf(stderr, "zklock::test::fault_proxy: %s\n", e.what());
            }
        }
    });
}

fault_proxy::~fault_proxy()
{
    impl_->run_sync([&] {
        error_code ec;
        impl_->acceptor.close(ec);
        impl_->reset_all();
    });
    impl_->work.reset();
    impl_->ioc.stop();
    impl_->thread.join();
}

std::uint16_t fault_proxy::port() const { return impl_->port; }

std::string fault_proxy::connect_string() const { return "127.0.0.1:" + std::to_string(impl_->port); }

void fault_proxy::set_target(std::uint16_t port) { impl_->target = port; }

void fault_proxy::retry_connect(std::chrono::milliseconds window)
{
    impl_->run_sync([&] { impl_->connect_retry = window; });
}

void fault_proxy::pass()
{
    impl_->run_sync([&] {
        impl_->current = mode::pass;
        impl_->resume_all();
    });
}

void fault_proxy::delay(std::chrono::milliseconds d)
{
    impl_->run_sync([&] {
        impl_->current = mode::delay;
        impl_->delay = d;
        impl_->resume_all();
    });
}

void fault_proxy::blackhole()
{
    impl_->run_sync([&] { impl_->current = mode::blackhole; });
}

void fault_proxy::reset()
{
    impl_->run_sync([&] { impl_->reset_all(); });
}

void fault_proxy::drop_reply(std::function<bool(std::int32_t, std::int32_t)> match)
{
    impl_->run_sync([&] { impl_->drop_match = std::move(match); });
}

void fault_proxy::drop_reply_to_next(std::int32_t op_type)
{
    drop_reply([op_type](std::int32_t, std::int32_t type) { return type == op_type; });
}

void fault_proxy::rewrite_election_address(std::string address)
{
    if (address.size() > initial_message_max_address)
        throw std::invalid_argument("fault_proxy: election address longer than ZooKeeper accepts");
    impl_->run_sync([&] { impl_->election_address = std::move(address); });
}

std::size_t fault_proxy::replies_dropped() const { return impl_->replies_dropped; }

std::size_t fault_proxy::connections_accepted() const { return impl_->connections_accepted; }

}  // namespace zklock::test
