#include "support/checker.hpp"

#include <algorithm>
#include <sstream>

namespace zklock::test {

namespace {

std::string describe(const checker::event& e, checker::clock::time_point origin)
{
    std::ostringstream o;
    o << e.holder << " (token " << e.token;
    if (e.local) o << "." << e.local;
    if (e.seq >= 0) o << ", seq " << e.seq;
    o << ", t=" << std::chrono::duration_cast<std::chrono::microseconds>(e.at - origin).count() << " us)";
    return o.str();
}

}  // namespace

void checker::granted(const std::string& lock, const std::string& holder, std::int64_t token, std::int64_t seq)
{
    record({kind::grant, lock, holder, token, seq, clock::now(), 0, {}, 0, {}});
}

void checker::granted(const std::string& lock, const std::string& holder, std::int64_t zxid, std::uint64_t local,
                      std::int64_t seq)
{
    record({kind::grant, lock, holder, zxid, seq, clock::now(), 0, {}, local, {}});
}

void checker::requested(const std::string& lock, const std::string& holder, const std::string& group)
{
    record({kind::request, lock, holder, 0, -1, clock::now(), 0, {}, 0, group});
}

void checker::expect_bounded_runs(const std::string& lock, std::size_t max_run, clock::duration grace)
{
    std::lock_guard g(m_);
    bounded_locks_[lock] = {max_run, grace};
}

void checker::check_runs(const std::string& lock, const std::vector<const event*>& evs, std::size_t max_run,
                         clock::duration grace, std::vector<std::string>& out) const
{
    struct req {
        std::string holder, group;
        clock::time_point asked, granted = clock::time_point::max();
    };
    std::map<std::string, req> reqs;
    std::vector<const event*> grants;
    for (const event* e : evs) {
        if (e->what == kind::request) reqs[e->holder] = {e->holder, e->group, e->at};
        if (e->what == kind::grant) {
            grants.push_back(e);
            if (auto it = reqs.find(e->holder); it != reqs.end()) it->second.granted = e->at;
        }
    }
    auto group_of = [&](const event* g) {
        auto it = reqs.find(g->holder);
        return it == reqs.end() ? std::string() : it->second.group;
    };
    for (std::size_t i = 0; i < grants.size();) {
        std::size_t j = i;
        const auto grp = group_of(grants[i]);
        while (j + 1 < grants.size() && group_of(grants[j + 1]) == grp) ++j;
        // Grants i..j are one run of `grp`. A waiter of another group that asked before the run
        // ended and was still waiting: the run's grants after its grace must be at most max_run.
        if (j - i + 1 > max_run) {
            for (const auto& [h, r] : reqs) {
                if (r.group == grp || r.asked > grants[j]->at || r.granted < grants[i]->at) continue;
                std::size_t n = 0;
                for (std::size_t k = i; k <= j; ++k)
                    if (grants[k]->at > r.asked + grace && grants[k]->at < r.granted) ++n;
                if (n > max_run) {
                    out.push_back(lock + ": unbounded run: " + std::to_string(n) + " grants to group " + grp +
                                  " (at most " + std::to_string(max_run) + ") while " + h + " of group " + r.group +
                                  " waited (asked " +
                                  std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                                     grants[j]->at - r.asked).count()) +
                                  " ms before the run's end)");
                    break;
                }
            }
        }
        i = j + 1;
    }
}

void checker::released(const std::string& lock, const std::string& holder, const std::string& note)
{
    record({kind::release, lock, holder, 0, -1, clock::now(), 0, note, 0, {}});
}

void checker::record(event e)
{
    std::lock_guard g(m_);
    e.order = next_order_++;
    events_.push_back(std::move(e));
}

void checker::expect_queue_order(const std::string& lock)
{
    std::lock_guard g(m_);
    ordered_locks_.insert(lock);
}

std::int64_t checker::read_counter(const std::string& lock)
{
    std::lock_guard g(m_);
    return counters_[lock].value;
}

void checker::write_counter(const std::string& lock, std::int64_t value)
{
    std::lock_guard g(m_);
    auto& c = counters_[lock];
    if (value != c.value + 1)
        c.lost.push_back("lost update on " + lock + ": wrote " + std::to_string(value) + " over " +
                         std::to_string(c.value) + " (another critical section ran in between)");
    c.value = value;
    ++c.writes;
}

std::int64_t checker::counter(const std::string& lock) const
{
    std::lock_guard g(m_);
    auto it = counters_.find(lock);
    return it == counters_.end() ? 0 : it->second.value;
}

std::size_t checker::counter_writes(const std::string& lock) const
{
    std::lock_guard g(m_);
    auto it = counters_.find(lock);
    return it == counters_.end() ? 0 : it->second.writes;
}

std::vector<checker::event> checker::history() const
{
    std::lock_guard g(m_);
    return events_;
}

std::size_t checker::grants(const std::string& lock) const
{
    std::lock_guard g(m_);
    return static_cast<std::size_t>(std::count_if(events_.begin(), events_.end(), [&](const event& e) {
        return e.what == kind::grant && (lock.empty() || e.lock == lock);
    }));
}

std::size_t checker::releases(const std::string& lock) const
{
    std::lock_guard g(m_);
    return static_cast<std::size_t>(std::count_if(events_.begin(), events_.end(), [&](const event& e) {
        return e.what == kind::release && (lock.empty() || e.lock == lock);
    }));
}

std::vector<std::string> checker::check(bool require_all_released) const
{
    std::lock_guard g(m_);
    std::vector<std::string> out;
    std::map<std::string, std::vector<const event*>> by_lock;
    for (const auto& e : events_) by_lock[e.lock].push_back(&e);
    const clock::time_point origin = events_.empty() ? clock::time_point{} : events_.front().at;

    for (auto& [lock, evs] : by_lock) {
        std::stable_sort(evs.begin(), evs.end(), [](const event* a, const event* b) {
            return a->at != b->at ? a->at < b->at : a->order < b->order;
        });
        const bool ordered = ordered_locks_.count(lock) > 0;
        const event* holding = nullptr;
        const event* last_grant = nullptr;
        std::set<std::string> granted_once;
        if (auto b = bounded_locks_.find(lock); b != bounded_locks_.end())
            check_runs(lock, evs, b->second.first, b->second.second, out);
        for (const event* e : evs) {
            if (e->what == kind::request) continue;
            if (e->what == kind::grant) {
                if (!granted_once.insert(e->holder).second)
                    out.push_back(lock + ": " + e->holder + " was granted twice");
                if (holding)
                    out.push_back(lock + ": overlap: " + describe(*e, origin) + " was granted while " +
                                  describe(*holding, origin) + " still held the lock");
                if (last_grant && std::pair(e->token, e->local) <= std::pair(last_grant->token, last_grant->local))
                    out.push_back(lock + ": fencing token did not increase: " + describe(*e, origin) + " after " +
                                  describe(*last_grant, origin));
                if (ordered && last_grant && e->seq >= 0 && last_grant->seq >= 0 && e->seq <= last_grant->seq)
                    out.push_back(lock + ": out of queue order: " + describe(*e, origin) + " after " +
                                  describe(*last_grant, origin));
                holding = e;
                last_grant = e;
            } else {
                if (!holding || holding->holder != e->holder) {
                    bool held_before = granted_once.count(e->holder) > 0;
                    out.push_back(lock + ": " + e->holder + " released (" + e->note + ") without holding the lock" +
                                  (held_before ? " (released twice?)" : ""));
                    continue;
                }
                holding = nullptr;
            }
        }
        if (require_all_released && holding)
            out.push_back(lock + ": " + describe(*holding, origin) + " never released");
    }
    for (const auto& [lock, c] : counters_)
        for (const auto& l : c.lost) out.push_back(l);
    return out;
}

std::string checker::report(bool require_all_released) const
{
    auto v = check(require_all_released);
    std::ostringstream o;
    {
        std::lock_guard g(m_);
        o << events_.size() << " events recorded; ";
    }
    o << v.size() << " violation(s)";
    const std::size_t shown = std::min<std::size_t>(v.size(), 20);
    for (std::size_t i = 0; i < shown; ++i) o << "\n  " << v[i];
    if (shown < v.size()) o << "\n  ... and " << v.size() - shown << " more";
    return o.str();
}

}  // namespace zklock::test
