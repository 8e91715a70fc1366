// Where the C client's blocking close runs: never on an executor thread. And what becomes of the
// context's sessions when it shuts down.
//
// zookeeper_close() sends the close request and then waits (poll) up to 1.5 s for the server's
// answer: on an executor thread that would stall every other operation of the io_context. So it
// runs on the thread of this service, one per execution context, started on first use. Like
// Asio's own resolver service, the service joins its thread when the execution context shuts down
// (in ~io_context, before the reactor and the strands go): no thread outlives the io_context, and a
// program ends cleanly.
//
// When the execution context shuts down, Asio destroys the handlers pending in it. A session holds
// the handlers of its operations itself (and those hold coroutine frames that hold the session):
// so the service, which knows every session of its context, first shuts each down
// (session_impl::shut_down: closed, every handler it holds destroyed, never invoked) and closes
// its ZooKeeper session (its ephemeral nodes go at once), on its thread, before joining it.
#pragma once

#include <zklock/detail/unique_function.hpp>

#include <boost/asio/execution_context.hpp>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_set>

#include <unistd.h>

namespace zklock::detail {

class session_impl;

class close_service final : public boost::asio::execution_context::service {
public:
    using key_type = close_service;
    static boost::asio::execution_context::id id;

    explicit close_service(boost::asio::execution_context& ctx);
    ~close_service() override;

    /// Runs `job` on the service's thread, after the jobs before it. Returns false (and drops
    /// nothing: `job` is left to the caller) if no thread can be had or the service has shut down.
    bool run(unique_function<void()>& job);

    /// The sessions of this context (see shutdown): from construction to destruction.
    void enroll(session_impl* s);
    void withdraw(session_impl* s);

private:
    void shutdown() override;
    void notify_fork(boost::asio::execution_context::fork_event event) override;
    void work();
    void shut_sessions_down();

    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<unique_function<void()>> jobs_;
    bool stopping_ = false;
    bool running_ = false;  // the thread has not decided to end
    static constexpr std::chrono::milliseconds idle_linger{0};  // ends as soon as the queue is empty
    std::thread thread_;
    ::pid_t owner_ = 0;  // the process that started the thread (a forked child has none)
    std::unordered_set<session_impl*> sessions_;
    bool sessions_shut_down_ = false;
};

}  // namespace zklock::detail
