// bench/measure.cpp — the clock and the process figures (threads, peak RSS, CPU time).
#include "bench.hpp"

#include <fstream>
#include <sstream>

namespace zklock_bench {

namespace {

const clock_type::time_point g_epoch = clock_type::now();

}  // namespace


std::int64_t now_ns() { return std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now() - g_epoch).count(); }

clock_type::time_point at_ns(std::int64_t t) { return g_epoch + std::chrono::nanoseconds(t); }

std::int64_t seconds_ns(double s) { return static_cast<std::int64_t>(s * 1e9); }


/// A "Key:  value kB" line of /proc/self/status, as a number (-1 if absent).
long proc_status(const char* key)
{
    std::ifstream in("/proc/self/status");
    const std::size_t n = std::strlen(key);
    for (std::string line; std::getline(in, line);)
        if (line.compare(0, n, key) == 0 && line.size() > n && line[n] == ':') return std::atol(line.c_str() + n + 1);
    return -1;
}


int os_threads() { return static_cast<int>(proc_status("Threads")); }

double peak_rss_mb() { return static_cast<double>(proc_status("VmHWM")) / 1024.0; }


/// Starts a fresh peak-RSS window: gives freed heap back to the OS, then resets VmHWM to the
/// current RSS (Linux >= 4.0, "5" > /proc/self/clear_refs). Without this a scenario would inherit
/// the peak of the one before (e.g. W10000's floor).
void reset_peak_rss()
{
    ::malloc_trim(0);
    std::ofstream("/proc/self/clear_refs") << "5";
}


/// CPU seconds (user, system) used so far by a process, from /proc/<pid>/stat; {0,0} if unknown.
std::pair<double, double> cpu_seconds(const std::string& pid)
{
    std::ifstream in("/proc/" + pid + "/stat");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto close = text.rfind(')');  // the command name may contain spaces
    if (close == std::string::npos) return {0, 0};
    std::istringstream rest(text.substr(close + 2));
    std::string field;
    double utime = 0, stime = 0;
    for (int i = 3; i <= 15 && rest >> field; ++i) {
        if (i == 14) utime = std::atof(field.c_str());
        if (i == 15) stime = std::atof(field.c_str());
    }
    const double hz = static_cast<double>(::sysconf(_SC_CLK_TCK));
    return {utime / hz, stime / hz};
}


double server_gc_cpu_seconds(const bench_ctx& c)
{
    double sum = 0;
    for (const auto& pid : c.server_pids) {
        std::error_code ec;
        for (const auto& task : std::filesystem::directory_iterator("/proc/" + pid + "/task", ec)) {
            std::ifstream comm(task.path() / "comm");
            std::string name;
            std::getline(comm, name);
            if (name.starts_with("GC Thread") || name.starts_with("G1 ") || name == "VM Thread") {
                const auto t = cpu_seconds(pid + "/task/" + task.path().filename().string());
                sum += t.first + t.second;
            }
        }
    }
    return sum;
}


std::pair<double, double> server_cpu_seconds(const bench_ctx& c)
{
    std::pair<double, double> sum{0.0, 0.0};
    for (const auto& pid : c.server_pids) {
        const auto s = cpu_seconds(pid);
        sum.first += s.first;
        sum.second += s.second;
    }
    return sum;
}


double cpu_meter::client_s() const
{
    const auto client = cpu_seconds();
    return (client.first - client0.first) + (client.second - client0.second);
}


double cpu_meter::server_s() const
{
    const auto server = server_cpu_seconds(c);
    return (server.first - server0.first) + (server.second - server0.second);
}


void cpu_meter::add_to(figures& f) const
{
    f.add("client_cpu_s", client_s());
    if (c.server_pids.empty()) return;
    f.add("server_cpu_s", server_s());
    f.add("server_gc_cpu_s", server_gc_cpu_seconds(c) - server_gc0);
}


void cpu_meter::report(const std::string& what) const
{
    const auto client = cpu_seconds();
    const auto server = server_cpu_seconds(c);
    const double wall = static_cast<double>(now_ns() - t0) / 1e9;
    char server_part[64] = "server n/a";
    if (!c.server_pids.empty())
        std::snprintf(server_part, sizeof server_part, "server%s user %6.2f sys %6.2f (gc %.2f)",
                      c.server_pids.size() > 1 ? "s" : "", server.first - server0.first,
                      server.second - server0.second, server_gc_cpu_seconds(c) - server_gc0);
    std::fprintf(stderr, "zklock_bench: cpu %-14s wall %6.2f s | client user %6.2f sys %6.2f | %s\n", what.c_str(), wall,
                 client.first - client0.first, client.second - client0.second, server_part);
}

}  // namespace zklock_bench
