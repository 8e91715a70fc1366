#include "close_service.hpp"

#include <system_error>

namespace zklock::detail {

boost::asio::execution_context::id close_service::id;

close_service::close_service(boost::asio::execution_context& ctx) : boost::asio::execution_context::service(ctx) {}

close_service::~close_service() { shutdown(); }

bool close_service::run(unique_function<void()>& job)
{
    std::lock_guard lock(mutex_);
    if (stopping_) return false;
    if (thread_.joinable() && !running_) thread_.join();  // it went idle and has ended (or is ending): nothing to wait for
    if (!thread_.joinable()) {
        try {
            running_ = true;
            thread_ = std::thread([this] { work(); });
            owner_ = ::getpid();
        } catch (const std::system_error&) {
            return false;
        }
    }
    jobs_.push_back(std::move(job));
    wake_.notify_one();
    return true;
}

void close_service::work()
{
    std::unique_lock lock(mutex_);
    for (;;) {
        // Idle: the thread ends (an application that closes a session now and then does not keep
        // a thread for it); the next close starts one again.
        wake_.wait_for(lock, idle_linger, [this] { return stopping_ || !jobs_.empty(); });
        if (jobs_.empty()) {  // stopping or idle, and every close is done
            running_ = false;
            return;
        }
        auto job = std::move(jobs_.front());
        jobs_.pop_front();
        lock.unlock();
        job();
        job = {};
        lock.lock();
    }
}

void close_service::shutdown()
{
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
        wake_.notify_one();
    }
    // Finishes the closes already handed over (each ends within the C client's own time limits).
    // In a child forked without notify_fork() the thread does not exist: forget it, never join.
    if (thread_.joinable() && owner_ != ::getpid()) (void)new std::thread(std::move(thread_));
    if (thread_.joinable()) thread_.join();
}

void close_service::notify_fork(boost::asio::execution_context::fork_event event)
{
    if (event != boost::asio::execution_context::fork_child) return;
    // The thread exists in the parent only: the child forgets it (the object, never joined, is
    // leaked on purpose), and the handles it was closing, which belong to the parent's sessions.
    new (&mutex_) std::mutex();
    new (&wake_) std::condition_variable();
    (void)new std::thread(std::move(thread_));
    for (auto& j : jobs_) (void)new unique_function<void()>(std::move(j));
    jobs_.clear();
}

}  // namespace zklock::detail
