// metrics_state (src/core/metrics_state.hpp) and the Prometheus text exposition format (0.0.4).
#include "core/metrics_state.hpp"

#include <boost/asio/error.hpp>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cmath>
#include <cstdio>

namespace zklock::detail {

template <std::size_t N> histogram_snapshot fixed_histogram<N>::snapshot() const
{
    histogram_snapshot h;
    h.upper_bounds.assign(bounds->begin(), bounds->end());
    h.cumulative.reserve(N);
    std::uint64_t acc = 0;
    for (std::size_t i = 0; i < N; ++i) h.cumulative.push_back(acc += buckets[i]);
    h.sum = sum;
    h.count = count;
    return h;
}

void metrics_state::acquire_started(lock_kind k, const std::string& path)
{
    ++counters(k).started;
    const bool was = engaged();
    ++paths_[path].waiters;
    engagement_changed(was);
}

void metrics_state::release_gauge(gauge_map::iterator it)
{
    if (it->second.waiters == 0 && it->second.holders == 0) paths_.erase(it);
}

void metrics_state::acquire_finished(lock_kind k, const std::string& path, error_code ec, clock::duration wait,
                                     bool handoff, bool with_listing)
{
    auto& c = counters(k);
    const bool was = engaged();
    auto it = paths_.find(path);
    if (it != paths_.end() && it->second.waiters > 0) --it->second.waiters;
    if (!ec) {
        ++c.granted;
        wait_.observe(std::chrono::duration<double>(wait).count());
        if (handoff) ++(with_listing ? handoffs_listed_ : handoffs_unlisted_);
        if (it == paths_.end()) it = paths_.try_emplace(path).first;
        ++it->second.holders;
        engagement_changed(was);
        return;
    }
    if (it != paths_.end()) release_gauge(it);
    engagement_changed(was);
    if (ec == errc::timeout) ++c.timed_out;
    else if (ec == boost::asio::error::operation_aborted) ++c.cancelled;
    else {
        ++c.failed;
        auto f = std::find_if(failed_.begin(), failed_.end(), [&](const auto& p) { return p.first == ec; });
        if (f == failed_.end()) failed_.emplace_back(ec, 1);
        else ++f->second;
    }
}

void metrics_state::lease_ended(const std::string& path, clock::duration held, error_code lost_reason)
{
    hold_.observe(std::chrono::duration<double>(held).count());
    if (lost_reason == errc::lock_lost) ++lost_deleted_;
    else if (lost_reason == errc::session_expired) ++lost_expired_;
    else if (lost_reason) ++lost_closed_;
    const bool was = engaged();
    if (auto it = paths_.find(path); it != paths_.end()) {
        if (it->second.holders > 0) --it->second.holders;
        release_gauge(it);
    }
    engagement_changed(was);
}

namespace {

const char* errc_name(errc e) noexcept
{
    switch (e) {
    case errc::timeout: return "timeout";
    case errc::would_block: return "would_block";
    case errc::lock_lost: return "lock_lost";
    case errc::session_expired: return "session_expired";
    case errc::session_closed: return "session_closed";
    case errc::not_connected: return "not_connected";
    case errc::connect_timeout: return "connect_timeout";
    case errc::invalid_path: return "invalid_path";
    case errc::invalid_servers: return "invalid_servers";
    case errc::invalid_argument: return "invalid_argument";
    case errc::permit_mismatch: return "permit_mismatch";
    case errc::already_released: return "already_released";
    case errc::recipe_mismatch: return "recipe_mismatch";
    case errc::request_too_large: return "request_too_large";
    case errc::request_dropped: return "request_dropped";
    case errc::operation_in_progress: return "operation_in_progress";
    case errc::not_zookeeper: return "not_zookeeper";
    case errc::unresolvable_host: return "unresolvable_host";
    case errc::chroot_missing: return "chroot_missing";
    case errc::chroot_mismatch: return "chroot_mismatch";
    case errc::tls_bad_config: return "tls_bad_config";
    case errc::tls_handshake_failed: return "tls_handshake_failed";
    case errc::tls_untrusted_certificate: return "tls_untrusted_certificate";
    case errc::tls_certificate_expired: return "tls_certificate_expired";
    case errc::tls_host_mismatch: return "tls_host_mismatch";
    case errc::tls_server_not_tls: return "tls_server_not_tls";
    case errc::tls_client_certificate_refused: return "tls_client_certificate_refused";
    case errc::tls_required: return "tls_required";
    case errc::no_leader: return "no_leader";
    case errc::not_supported: return "not_supported";
    }
    return nullptr;
}

std::string error_name(error_code ec)
{
    if (ec.category() == zklock_category())
        if (const char* n = errc_name(static_cast<errc>(ec.value()))) return n;
    std::string cat = ec.category().name();
    for (char& ch : cat)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
    return cat + "_" + (ec.value() < 0 ? "minus" + std::to_string(-ec.value()) : std::to_string(ec.value()));
}

constexpr const char* request_names[] = {"create", "delete", "exists", "get_data", "set_data", "get_children", "multi", "sync"};

}  // namespace

metrics_snapshot metrics_state::snapshot() const
{
    metrics_snapshot m;
    for (const auto k : lock_kinds) m.of(k) = by_kind_[static_cast<std::size_t>(k)];
    for (const auto& [ec, n] : failed_) m.failed_by_error.emplace_back(error_name(ec), n);
    std::sort(m.failed_by_error.begin(), m.failed_by_error.end());
    m.wait_seconds = wait_.snapshot();
    m.hold_seconds = hold_.snapshot();
    m.handoffs_with_listing = handoffs_listed_;
    m.handoffs_without_listing = handoffs_unlisted_;
    m.cohort_turn_grants = cohort_turns_;
    m.cohort_local_handoffs = cohort_local_;
    m.leases_lost_node_deleted = lost_deleted_;
    m.leases_lost_session_expired = lost_expired_;
    m.leases_lost_session_closed = lost_closed_;
    m.reconnects = reconnects_;
    m.session_expiries = expiries_;
    m.presumed_expiries = presumed_expiries_;
    m.background_cleanups = background_cleanups_;
    m.background_cleanups_pending = background_cleanups_pending_;
    for (std::size_t i = 0; i < requests_.size(); ++i) m.requests.emplace_back(request_names[i], requests_[i]);
    m.listing_size = listing_size_.snapshot();
    for (const auto& [p, g] : paths_) m.paths.push_back({p, g.waiters, g.holders});
    std::sort(m.paths.begin(), m.paths.end(), [](const path_gauges& a, const path_gauges& b) { return a.path < b.path; });
    return m;
}

}  // namespace zklock::detail

namespace zklock {

namespace {

void append_escaped(std::string& out, std::string_view v)
{
    for (char c : v) {
        if (c == '\\') out += "\\\\";
        else if (c == '"') out += "\\\"";
        else if (c == '\n') out += "\\n";
        else out += c;
    }
}

// {a="x",b="y"} from the session's labels plus `extra` (name, value) pairs; empty if none.
std::string label_set(const std::vector<metric_label>& base, std::initializer_list<std::pair<const char*, std::string_view>> extra = {})
{
    if (base.empty() && extra.size() == 0) return {};
    std::string s = "{";
    bool first = true;
    auto add = [&](std::string_view k, std::string_view v) {
        if (!first) s += ',';
        first = false;
        s += k;
        s += "=\"";
        append_escaped(s, v);
        s += '"';
    };
    for (const auto& [k, v] : base) add(k, v);
    for (const auto& [k, v] : extra) add(k, v);
    s += '}';
    return s;
}

std::string number(double v)
{
    if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
    if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<long long>(v));  // 10, not 1e+01
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    // Shortest form that reads back exactly, for readability of bounds like 0.0001.
    for (int prec = 1; prec <= 17; ++prec) {
        char b2[64];
        std::snprintf(b2, sizeof b2, "%.*g", prec, v);
        if (std::strtod(b2, nullptr) == v) return b2;
    }
    return buf;
}

using session_list = std::vector<std::pair<metrics_snapshot, std::vector<metric_label>>>;

class renderer {
public:
    explicit renderer(const session_list& s) : s_(s) {}

    void header(const char* name, const char* type, const char* help)
    {
        out_ += "# HELP ";
        out_ += name;
        out_ += ' ';
        out_ += help;
        out_ += "\n# TYPE ";
        out_ += name;
        out_ += ' ';
        out_ += type;
        out_ += '\n';
    }
    void sample(std::string_view name, const std::string& labels, std::string_view value)
    {
        out_ += name;
        out_ += labels;
        out_ += ' ';
        out_ += value;
        out_ += '\n';
    }
    void sample(std::string_view name, const std::string& labels, std::uint64_t v) { sample(name, labels, std::to_string(v)); }

    // A counter or gauge family: `get` gives, per session, (extra labels, value) pairs.
    template <class Get> void family(const char* name, const char* type, const char* help, Get get)
    {
        header(name, type, help);
        for (const auto& [m, labels] : s_) get(m, labels);
    }

    void histogram(const char* name, const char* help, const histogram_snapshot metrics_snapshot::*h)
    {
        header(name, "histogram", help);
        const std::string n = name;
        for (const auto& [m, labels] : s_) {
            const histogram_snapshot& x = m.*h;
            for (std::size_t i = 0; i < x.upper_bounds.size() && i < x.cumulative.size(); ++i)
                sample(n + "_bucket", label_set(labels, {{"le", number(x.upper_bounds[i])}}), x.cumulative[i]);
            sample(n + "_bucket", label_set(labels, {{"le", "+Inf"}}), x.count);
            sample(n + "_sum", label_set(labels), number(x.sum));
            sample(n + "_count", label_set(labels), x.count);
        }
    }

    std::string take() { return std::move(out_); }

private:
    const session_list& s_;
    std::string out_;
};

}  // namespace

std::string to_prometheus(const session_list& sessions)
{
    renderer r(sessions);
    using snap = metrics_snapshot;
    using labs = std::vector<metric_label>;
    auto per_kind = [&](const char* name, const char* help, std::uint64_t acquire_counters::*f) {
        r.family(name, "counter", help, [&](const snap& m, const labs& l) {
            for (const auto k : lock_kinds) r.sample(name, label_set(l, {{"kind", to_string(k)}}), m.of(k).*f);
        });
    };
    per_kind("zklock_acquires_started_total", "Acquires started, by kind of node (exclusive, shared, permit).",
             &acquire_counters::started);
    per_kind("zklock_acquires_granted_total", "Acquires that were granted the lock.", &acquire_counters::granted);
    per_kind("zklock_acquires_timed_out_total", "Acquires that failed with errc::timeout (their deadline passed).",
             &acquire_counters::timed_out);
    per_kind("zklock_acquires_cancelled_total", "Acquires cancelled (operation_aborted).", &acquire_counters::cancelled);
    per_kind("zklock_acquires_failed_total", "Acquires that failed with any other error (see zklock_acquire_errors_total).",
             &acquire_counters::failed);
    r.family("zklock_acquire_errors_total", "counter", "Failed acquires by error (a zklock::errc name, or category_code).",
             [&](const snap& m, const labs& l) {
                 for (const auto& [e, n] : m.failed_by_error) r.sample("zklock_acquire_errors_total", label_set(l, {{"error", e}}), n);
             });
    r.histogram("zklock_acquire_wait_seconds", "Time from the start of an acquire to its grant.", &snap::wait_seconds);
    r.histogram("zklock_lease_hold_seconds", "Time a lease held its lock, from the grant to its release or loss.",
                &snap::hold_seconds);
    r.family("zklock_handoffs_total", "counter",
             "Grants to a waiter that queued behind another node, with or without a listing of the lock path.",
             [&](const snap& m, const labs& l) {
                 r.sample("zklock_handoffs_total", label_set(l, {{"listing", "true"}}), m.handoffs_with_listing);
                 r.sample("zklock_handoffs_total", label_set(l, {{"listing", "false"}}), m.handoffs_without_listing);
             });
    r.family("zklock_cohort_grants_total", "counter",
             "Cohort mode: grants to the first local holder of a fresh node (handoff=\"turn\") or handed on "
             "locally on the same node with no ZooKeeper request (handoff=\"local\").",
             [&](const snap& m, const labs& l) {
                 r.sample("zklock_cohort_grants_total", label_set(l, {{"handoff", "turn"}}), m.cohort_turn_grants);
                 r.sample("zklock_cohort_grants_total", label_set(l, {{"handoff", "local"}}), m.cohort_local_handoffs);
             });
    r.family("zklock_leases_lost_total", "counter",
             "Leases lost while held, by reason: node_deleted (lock_lost), session_expired, session_closed.",
             [&](const snap& m, const labs& l) {
                 r.sample("zklock_leases_lost_total", label_set(l, {{"reason", "node_deleted"}}), m.leases_lost_node_deleted);
                 r.sample("zklock_leases_lost_total", label_set(l, {{"reason", "session_expired"}}), m.leases_lost_session_expired);
                 r.sample("zklock_leases_lost_total", label_set(l, {{"reason", "session_closed"}}), m.leases_lost_session_closed);
             });
    r.family("zklock_reconnects_total", "counter", "Connections re-established after a connection loss.",
             [&](const snap& m, const labs& l) { r.sample("zklock_reconnects_total", label_set(l), m.reconnects); });
    r.family("zklock_session_expiries_total", "counter", "ZooKeeper sessions the server reported expired.",
             [&](const snap& m, const labs& l) { r.sample("zklock_session_expiries_total", label_set(l), m.session_expiries); });
    r.family("zklock_session_presumed_expiries_total", "counter",
             "Sessions presumed expired client-side (the leader unconfirmed for half the session timeout, or cut off).",
             [&](const snap& m, const labs& l) {
                 r.sample("zklock_session_presumed_expiries_total", label_set(l), m.presumed_expiries);
             });
    r.family("zklock_background_cleanups_total", "counter",
             "Acquires that completed before their node could be deleted; the deletion went on in the background.",
             [&](const snap& m, const labs& l) {
                 r.sample("zklock_background_cleanups_total", label_set(l), m.background_cleanups);
             });
    r.family("zklock_background_cleanups_pending", "gauge", "Background deletions of such nodes not finished yet.",
             [&](const snap& m, const labs& l) {
                 r.sample("zklock_background_cleanups_pending", label_set(l), m.background_cleanups_pending);
             });
    r.family("zklock_requests_total", "counter", "Requests sent to ZooKeeper, by type.", [&](const snap& m, const labs& l) {
        for (const auto& [t, n] : m.requests) r.sample("zklock_requests_total", label_set(l, {{"type", t}}), n);
    });
    r.histogram("zklock_listing_children", "Children per listing of a lock path.", &snap::listing_size);
    r.family("zklock_waiters", "gauge", "Acquires waiting now, per lock path.", [&](const snap& m, const labs& l) {
        for (const auto& p : m.paths) r.sample("zklock_waiters", label_set(l, {{"path", p.path}}), p.waiters);
    });
    r.family("zklock_holders", "gauge", "Leases held now, per lock path.", [&](const snap& m, const labs& l) {
        for (const auto& p : m.paths) r.sample("zklock_holders", label_set(l, {{"path", p.path}}), p.holders);
    });
    return r.take();
}

std::string to_prometheus(const metrics_snapshot& m, const std::vector<metric_label>& labels)
{
    return to_prometheus(session_list{{m, labels}});
}

}  // namespace zklock
