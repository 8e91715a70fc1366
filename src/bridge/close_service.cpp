#include "bridge/close_service.hpp"

#include "bridge/session_impl.hpp"

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

void close_service::enroll(session_impl* s)
{
    std::lock_guard lock(mutex_);
    sessions_.insert(s);
}

void close_service::withdraw(session_impl* s)
{
    std::lock_guard lock(mutex_);
    sessions_.erase(s);
}

void close_service::shutdown()
{
    // The sessions first: their closes go to the thread, which is joined below.
    std::vector<std::shared_ptr<session_impl>> live;
    {
        std::lock_guard lock(mutex_);
        if (!sessions_shut_down_) {
            sessions_shut_down_ = true;
            for (session_impl* s : sessions_)
                if (auto p = s->weak_from_this().lock()) live.push_back(std::move(p));
        }
    }
    using sink = std::vector<std::unique_ptr<c_event>>;
    std::vector<std::shared_ptr<sink>> sinks;  // what the closes hand back: the requests they failed
    graveyard g;
    auto close = [&](zhandle_t* zh) {
        auto results = sinks.emplace_back(std::make_shared<sink>());
        unique_function<void()> job = [zh, results] {
            redirect_results redirect(*results);
            zookeeper_close(zh);
        };
        // A connected handle sends the close request and waits for the answer: on the thread.
        if (zoo_state(zh) != ZOO_CONNECTED_STATE || !run(job)) job();
    };
    for (auto& s : live)
        if (zhandle_t* zh = s->shut_down(g)) close(zh);
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
        wake_.notify_one();
    }
    // Finishes the closes already handed over (each ends within the C client's own time limits).
    // In a child forked without notify_fork() the thread does not exist: forget it, never join.
    if (thread_.joinable() && owner_ != ::getpid()) (void)new std::thread(std::move(thread_));
    if (thread_.joinable()) thread_.join();
    // Then what they held goes, on this thread: the handlers of the closes' failed requests, and
    // whatever destroying those made the sessions queue anew.
    while (!live.empty()) {
        for (auto& results : sinks) {
            for (auto& e : *results) {
                e->abandon(g);
                g.bury(std::move(e));
            }
            results->clear();
        }
        // A session already shut down has no handle left: this only drops what it queued since.
        for (auto& s : live) (void)s->shut_down(g);
        if (g.empty()) break;
        g.clear();
    }
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
