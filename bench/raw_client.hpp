// bench/raw_client.hpp — the raw floor's client: libzookeeper_st driven by Asio on the bench's one
// thread, with no zklock object in between. It is what a careful user without zklock would write:
// zookeeper_interest() says which fd, which events and by when; a posix::stream_descriptor waits
// for the events (released, never closed: the C client owns the socket) and a steady_timer for
// the deadline; zookeeper_process() runs; each C completion posts its coroutine's handler onto the
// executor. Only what the floor needs: create, get_children, a one-shot data watch, delete.
#pragma once

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/system/error_code.hpp>

#include <zookeeper/zookeeper.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace zklock_bench {

namespace asio = boost::asio;
using boost::system::error_code;

class raw_session : public std::enable_shared_from_this<raw_session> {
public:
    struct watch_state;
    /// A one-shot data watch: async_wait completes with (error_code, deleted) when it fires.
    class watch {
    public:
        template <class Token> auto async_wait(Token&& token)
        {
            return asio::async_initiate<Token, void(error_code, bool)>(
                [](asio::any_completion_handler<void(error_code, bool)> h, std::shared_ptr<watch_state> s) {
                    wait(std::move(s), std::move(h));
                },
                token, s_);
        }
        std::shared_ptr<watch_state> s_;

    private:
        static void wait(std::shared_ptr<watch_state> s, asio::any_completion_handler<void(error_code, bool)> h);
    };

    /// Starts the handle; connect() waits for the session.
    static std::shared_ptr<raw_session> make(asio::any_io_executor ex, const std::string& servers,
                                             std::chrono::milliseconds session_timeout);
    ~raw_session();
    std::size_t pending_bytes_ = 0;  // listings posted to their coroutines, not yet taken (bounds the drain)

    asio::awaitable<error_code> connect(std::chrono::milliseconds timeout);
    /// zookeeper_close(): blocks for one round trip (the bench calls it after measuring).
    void close();

    template <class Token> auto async_create(std::string path, std::string data, Token&& token)
    {
        return asio::async_initiate<Token, void(error_code, std::string)>(
            [self = shared_from_this()](asio::any_completion_handler<void(error_code, std::string)> h, std::string p,
                                        std::string d) { self->start_create(p, d, std::move(h)); },
            token, std::move(path), std::move(data));
    }
    template <class Token> auto async_get_children(std::string path, Token&& token)
    {
        return asio::async_initiate<Token, void(error_code, std::vector<std::string>)>(
            [self = shared_from_this()](asio::any_completion_handler<void(error_code, std::vector<std::string>)> h,
                                        std::string p) { self->start_children(p, std::move(h)); },
            token, std::move(path));
    }
    /// get_data with a watch: (error_code, watch).
    template <class Token> auto async_watch_data(std::string path, Token&& token)
    {
        return asio::async_initiate<Token, void(error_code, watch)>(
            [self = shared_from_this()](asio::any_completion_handler<void(error_code, watch)> h, std::string p) {
                self->start_watch(p, std::move(h));
            },
            token, std::move(path));
    }
    template <class Token> auto async_remove(std::string path, Token&& token)
    {
        return asio::async_initiate<Token, void(error_code)>(
            [self = shared_from_this()](asio::any_completion_handler<void(error_code)> h, std::string p) {
                self->start_remove(p, std::move(h));
            },
            token, std::move(path));
    }

    const asio::any_io_executor& executor() const noexcept { return ex_; }

private:
    explicit raw_session(asio::any_io_executor ex);
    void start_create(const std::string& path, const std::string& data,
                      asio::any_completion_handler<void(error_code, std::string)> h);
    void start_children(const std::string& path, asio::any_completion_handler<void(error_code, std::vector<std::string>)> h);
    void start_watch(const std::string& path, asio::any_completion_handler<void(error_code, watch)> h);
    void start_remove(const std::string& path, asio::any_completion_handler<void(error_code)> h);
    void submitted(int rc);
    void drive();
    void process(int events);
    static void global_watcher(zhandle_t*, int type, int state, const char* path, void* ctx);

    asio::any_io_executor ex_;
    zhandle_t* zh_ = nullptr;
    asio::posix::stream_descriptor desc_;
    asio::steady_timer timer_;
    asio::steady_timer connected_;
    int fd_ = -1;
    unsigned long fd_ino_ = 0;
    bool reading_ = false, writing_ = false, timer_armed_ = false, in_process_ = false;
    unsigned io_gen_ = 0;
    int state_ = 0;

};

}  // namespace zklock_bench
