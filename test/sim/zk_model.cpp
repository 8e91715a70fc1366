#include "zk_model.hpp"

#include <algorithm>
#include <cassert>
#include <cstdio>

namespace zklock::sim {

namespace {

using kind = request::kind;

// One primitive change of a transaction, as every replica applies it.
struct change {
    enum class type { create, remove, set } t = type::create;
    std::string path;
    std::string data;
    zklock::stat st;            ///< create: the node's stat; set: the new version, mzxid, mtime
    std::int32_t parent_cversion = 0;  ///< create: the parent's cversion after it
    bool container = false;     ///< create: a container node
};

// A node of a replica.
struct node {
    std::string data;
    // As the server keeps it: cversion counts the children created (the next sequence number);
    // a client reads client_stat(). A container's ephemeralOwner is 0 here too (what a client
    // reads; the server keeps a mark).
    zklock::stat st;
    bool container = false;
    std::set<std::string> children;  // names
};

std::string parent_of(const std::string& path)
{
    const auto slash = path.rfind('/');
    return slash == 0 ? std::string("/") : path.substr(0, slash);
}

std::string name_of(const std::string& path) { return path.substr(path.rfind('/') + 1); }

// The stat a client reads (DataNode.copyStat): the server counts creations in cversion, and
// reports the changes of the children, a deletion for every child created and gone.
zklock::stat client_stat(const node& n)
{
    zklock::stat st = n.st;
    st.num_children = static_cast<std::int32_t>(n.children.size());
    st.cversion = n.st.cversion * 2 - st.num_children;
    return st;
}

// ZooKeeper's PathUtils.validatePath, for the paths zklock sends: absolute, no empty, "." or ".."
// component, no trailing slash (a sequential create may end with one).
bool valid_path(const std::string& p, bool sequential)
{
    if (p.empty() || p[0] != '/') return false;
    if (p.size() == 1) return !sequential;
    if (p.back() == '/' && !sequential) return false;
    std::size_t i = 1;
    while (i <= p.size()) {
        auto j = p.find('/', i);
        if (j == std::string::npos) j = p.size();
        const auto comp = p.substr(i, j - i);
        if (comp.empty() && !(sequential && j == p.size())) return false;
        if (comp == "." || comp == "..") return false;
        for (unsigned char c : comp)
            if (c == 0 || (c > 0 && c < 0x20) || c == 0x7f) return false;
        i = j + 1;
    }
    return true;
}

bool is_sequential(create_mode m) { return m == create_mode::persistent_sequential || m == create_mode::ephemeral_sequential; }
bool is_ephemeral(create_mode m) { return m == create_mode::ephemeral || m == create_mode::ephemeral_sequential; }

}  // namespace

struct zk_model::impl {
    struct replica {
        std::map<std::string, node> nodes;
        std::size_t applied = 0;    // entries of the log applied
        std::int64_t zxid = 0;      // the last zxid applied
        bool reaches_leader = true;
        std::map<std::string, std::set<session_id>> data_w, child_w;
    };
    // One entry of the leader's log: a transaction (zxid > 0) or a sync (zxid 0).
    struct entry {
        std::int64_t zxid = 0;
        std::vector<change> changes;
        session_id origin = 0;       // the session whose request it answers (0: none)
        bool answer = false;         // queue a reply to the origin when applied on its server
        reply r;
        session_id closes = 0;       // a closeSession: the session ends
    };
    struct pending {
        std::uint64_t tag = 0;
        request r;
        bool forwarded = false;      // a write or sync the leader has in its log
        std::size_t entry = 0;       // its log index once forwarded
    };
    struct session {
        int server = -1;
        sim_clock::duration timeout{};
        sim_clock::time_point touched{};
        bool alive = true;
        std::deque<pending> queue;   // at its server, oldest first
        std::deque<message> out;
        std::set<std::string> ephemerals;
    };

    int servers;
    std::int64_t epoch_ms;
    std::vector<replica> reps;
    std::vector<entry> log;
    std::map<session_id, session> sessions;
    session_id next_session = 0x100;
    std::int64_t next_zxid = 1;
    std::set<std::string> denied;
    std::set<std::string> write_denied;
    sim_clock::time_point last_now{};
    std::deque<message> no_outbox;
    std::function<void(const std::string&, const std::string&, bool)> committed;

    impl(int n, std::int64_t epoch) : servers(n), epoch_ms(epoch), reps(static_cast<std::size_t>(n))
    {
        for (auto& r : reps) {
            node root;
            r.nodes.emplace("/", std::move(root));
        }
    }

    std::int64_t ms_of(sim_clock::time_point t) const
    {
        return epoch_ms + std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
    }
    replica& leader() { return reps[0]; }

    // ---- applying changes to a replica, with its watches ----

    void trigger(replica& rep, std::map<std::string, std::set<session_id>>& table, const std::string& path, event_type t)
    {
        auto it = table.find(path);
        if (it == table.end()) return;
        auto who = std::move(it->second);
        table.erase(it);
        for (auto s : who) {
            auto si = sessions.find(s);
            if (si == sessions.end() || si->second.server != static_cast<int>(&rep - reps.data())) continue;
            message m;
            m.is_event = true;
            m.e = {t, path};
            si->second.out.push_back(std::move(m));
        }
    }

    void apply_change(replica& rep, const change& c, std::int64_t zxid)
    {
        switch (c.t) {
        case change::type::create: {
            auto& parent = rep.nodes.at(parent_of(c.path));
            parent.children.insert(name_of(c.path));
            parent.st.cversion = c.parent_cversion;
            parent.st.num_children = static_cast<std::int32_t>(parent.children.size());
            parent.st.pzxid = zxid;
            node n;
            n.data = c.data;
            n.st = c.st;
            n.container = c.container;
            rep.nodes[c.path] = std::move(n);
            trigger(rep, rep.data_w, c.path, event_type::created);
            trigger(rep, rep.child_w, parent_of(c.path), event_type::child);
            if (committed && &rep == &leader()) committed(c.path, c.data, true);
            break;
        }
        case change::type::remove: {
            rep.nodes.erase(c.path);
            auto& parent = rep.nodes.at(parent_of(c.path));
            parent.children.erase(name_of(c.path));
            parent.st.num_children = static_cast<std::int32_t>(parent.children.size());
            if (zxid > parent.st.pzxid) parent.st.pzxid = zxid;
            trigger(rep, rep.data_w, c.path, event_type::deleted);
            trigger(rep, rep.child_w, c.path, event_type::deleted);
            trigger(rep, rep.child_w, parent_of(c.path), event_type::child);
            break;
        }
        case change::type::set: {
            auto& n = rep.nodes.at(c.path);
            n.data = c.data;
            n.st.version = c.st.version;
            n.st.mzxid = c.st.mzxid;
            n.st.mtime = c.st.mtime;
            n.st.data_length = static_cast<std::int32_t>(c.data.size());
            trigger(rep, rep.data_w, c.path, event_type::changed);
            if (committed && &rep == &leader()) committed(c.path, c.data, false);
            break;
        }
        }
    }

    // Applies the next entry of the log on replica `ri`.
    void apply_next(std::size_t ri)
    {
        auto& rep = reps[ri];
        const auto& e = log[rep.applied++];
        if (e.zxid > 0) {
            for (const auto& c : e.changes) apply_change(rep, c, e.zxid);
            rep.zxid = e.zxid;
        }
        if (e.origin != 0) {
            auto si = sessions.find(e.origin);
            if (si != sessions.end() && si->second.server == static_cast<int>(ri) && e.answer) {
                auto& s = si->second;
                // The request this entry answers is the oldest of the session's queue.
                if (!s.queue.empty() && s.queue.front().forwarded && s.queue.front().entry == rep.applied - 1) {
                    message m;
                    m.r = e.r;
                    m.r.tag = s.queue.front().tag;
                    m.r.zxid = rep.zxid;
                    s.queue.pop_front();
                    s.out.push_back(std::move(m));
                }
            }
        }
        if (e.closes != 0) {
            // The server closes the connection of the ended session (ZooKeeper: on applying its
            // closeSession).
            for (auto& [path, who] : rep.data_w) who.erase(e.closes);
            for (auto& [path, who] : rep.child_w) who.erase(e.closes);
        }
    }

    void catch_up_leader()
    {
        while (leader().applied < log.size()) apply_next(0);
    }

    // ---- the leader: a write becomes a transaction ----

    // A working view of the leader's tree while a multi is prepared: changes not applied yet.
    struct view {
        const std::map<std::string, node>& base;
        std::map<std::string, std::optional<node>> over;
        const node* get(const std::string& p) const
        {
            auto it = over.find(p);
            if (it != over.end()) return it->second ? &*it->second : nullptr;
            auto b = base.find(p);
            return b == base.end() ? nullptr : &b->second;
        }
        node* edit(const std::string& p)
        {
            auto it = over.find(p);
            if (it == over.end()) {
                auto b = base.find(p);
                if (b == base.end()) return nullptr;
                it = over.emplace(p, b->second).first;
            }
            return it->second ? &*it->second : nullptr;
        }
    };

    // Prepares one op against `v`; its changes go to `out`; returns its error, and its result.
    error_code prep(view& v, session_id s, const multi_op& op, std::int64_t zxid, std::int64_t now_ms,
                    std::vector<change>& out, multi_result& res)
    {
        switch (op.type) {
        case multi_op::kind::create: {
            const bool seq = is_sequential(op.mode);
            if (!valid_path(op.path, seq)) return zk_errc::bad_arguments;
            const std::string parent_path = parent_of(op.path);
            const node* parent = v.get(parent_path);
            if (!parent) return zk_errc::no_node;
            if (denied.contains(parent_path)) return zk_errc::no_auth;
            std::string path = op.path;
            if (seq) {
                char buf[16];
                std::snprintf(buf, sizeof buf, "%010d", parent->st.cversion);
                path += buf;
            }
            if (v.get(path)) return zk_errc::node_exists;
            if (parent->st.ephemeral_owner != 0) return zk_errc::no_children_for_ephemerals;
            change c;
            c.t = change::type::create;
            c.path = path;
            c.data = op.data;
            c.st.czxid = c.st.mzxid = c.st.pzxid = zxid;
            c.st.ctime = c.st.mtime = now_ms;
            c.st.data_length = static_cast<std::int32_t>(op.data.size());
            // A container's owner is a mark inside the server (EphemeralType.CONTAINER_EPHEMERAL_OWNER),
            // which a client reads as 0 (DataTree.copyStat).
            c.st.ephemeral_owner = is_ephemeral(op.mode) ? s : 0;
            c.container = op.mode == create_mode::container;
            c.parent_cversion = parent->st.cversion + 1;
            node n;
            n.data = op.data;
            n.st = c.st;
            n.container = c.container;
            v.over[path] = std::move(n);
            node* pe = v.edit(parent_path);
            pe->children.insert(name_of(path));
            pe->st.cversion = c.parent_cversion;
            pe->st.num_children = static_cast<std::int32_t>(pe->children.size());
            pe->st.pzxid = zxid;
            res.path = path;
            out.push_back(std::move(c));
            return {};
        }
        case multi_op::kind::remove: {
            if (!valid_path(op.path, false) || op.path == "/") return zk_errc::bad_arguments;
            const node* n = v.get(op.path);
            if (!n) return zk_errc::no_node;
            if (op.version != -1 && op.version != n->st.version) return zk_errc::bad_version;
            if (!n->children.empty()) return zk_errc::not_empty;
            change c;
            c.t = change::type::remove;
            c.path = op.path;
            v.over[op.path] = std::nullopt;
            node* pe = v.edit(parent_of(op.path));
            pe->children.erase(name_of(op.path));
            pe->st.num_children = static_cast<std::int32_t>(pe->children.size());
            pe->st.pzxid = zxid;
            out.push_back(std::move(c));
            return {};
        }
        case multi_op::kind::set_data: {
            if (!valid_path(op.path, false)) return zk_errc::bad_arguments;
            node* n = v.edit(op.path);
            if (!n) return zk_errc::no_node;
            // PrepRequestProcessor: the node's WRITE permission is checked before its version.
            if (write_denied.contains(op.path)) return zk_errc::no_auth;
            if (op.version != -1 && op.version != n->st.version) return zk_errc::bad_version;
            change c;
            c.t = change::type::set;
            c.path = op.path;
            c.data = op.data;
            n->data = op.data;
            n->st.version += 1;
            n->st.mzxid = zxid;
            n->st.mtime = now_ms;
            n->st.data_length = static_cast<std::int32_t>(op.data.size());
            c.st = n->st;
            res.stat = client_stat(*n);
            out.push_back(std::move(c));
            return {};
        }
        case multi_op::kind::check: {
            if (!valid_path(op.path, false)) return zk_errc::bad_arguments;
            const node* n = v.get(op.path);
            if (!n) return zk_errc::no_node;
            if (op.version != -1 && op.version != n->st.version) return zk_errc::bad_version;
            return {};
        }
        }
        return zk_errc::unimplemented;
    }

    // The leader takes the session's request: a log entry (a transaction with its zxid, an error
    // transaction, or a sync).
    std::size_t lead(session_id s, const request& r, sim_clock::time_point now)
    {
        catch_up_leader();
        entry e;
        e.origin = s;
        e.answer = true;
        const auto now_ms = ms_of(now);
        if (r.type == kind::sync) {
            e.r.path = r.path;
            log.push_back(std::move(e));
            return log.size() - 1;
        }
        e.zxid = next_zxid++;
        if (r.type == kind::close) {
            e.closes = s;
            auto& ss = sessions.at(s);
            for (const auto& p : ss.ephemerals) {
                change c;
                c.t = change::type::remove;
                c.path = p;
                e.changes.push_back(std::move(c));
            }
            ss.ephemerals.clear();
            ss.alive = false;
            e.answer = true;
            log.push_back(std::move(e));
            return log.size() - 1;
        }
        view v{leader().nodes, {}};
        if (r.type == kind::multi) {
            std::vector<multi_result> results(r.ops.size());
            std::vector<change> changes;
            std::size_t failed = r.ops.size();
            error_code first;
            for (std::size_t i = 0; i < r.ops.size(); ++i) {
                if (failed < r.ops.size()) {
                    results[i].ec = zk_errc::runtime_inconsistency;
                    continue;
                }
                auto ec = prep(v, s, r.ops[i], e.zxid, now_ms, changes, results[i]);
                if (ec) {
                    failed = i;
                    first = ec;
                    results[i].ec = ec;
                }
            }
            if (failed < r.ops.size()) {
                for (std::size_t i = 0; i < failed; ++i) results[i] = multi_result{};
                e.r.ec = first;
            } else {
                e.changes = std::move(changes);
            }
            e.r.results = std::move(results);
        } else {
            multi_op op;
            op.path = r.path;
            op.data = r.data;
            op.mode = r.mode;
            op.version = r.version;
            op.type = r.type == kind::create ? multi_op::kind::create
                      : r.type == kind::remove ? multi_op::kind::remove
                                               : multi_op::kind::set_data;
            multi_result res;
            auto ec = prep(v, s, op, e.zxid, now_ms, e.changes, res);
            if (ec) {
                e.changes.clear();
                e.r.ec = ec;
            } else if (r.type == kind::create) {
                e.r.path = res.path;
                e.r.stat = e.changes.front().st;
            } else if (r.type == kind::set_data) {
                e.r.stat = res.stat;
            }
        }
        // The session's ephemerals, as the leader tracks them.
        auto& ss = sessions.at(s);
        for (const auto& c : e.changes) {
            if (c.t == change::type::create && c.st.ephemeral_owner == s) ss.ephemerals.insert(c.path);
            if (c.t == change::type::remove)
                for (auto& [id, other] : sessions) other.ephemerals.erase(c.path);
        }
        log.push_back(std::move(e));
        return log.size() - 1;
    }

    // A read, from replica `ri`.
    reply read(std::size_t ri, session_id s, const request& r)
    {
        auto& rep = reps[ri];
        reply out;
        out.zxid = rep.zxid;
        auto it = rep.nodes.find(r.path);
        if (!valid_path(r.path, false)) {
            out.ec = zk_errc::bad_arguments;
            return out;
        }
        switch (r.type) {
        case kind::exists:
            // A watch set by exists is registered whether or not the node exists.
            if (r.watch) rep.data_w[r.path].insert(s);
            if (it == rep.nodes.end()) out.ec = zk_errc::no_node;
            else out.stat = client_stat(it->second);
            break;
        case kind::get_data:
            if (it == rep.nodes.end()) {
                out.ec = zk_errc::no_node;
                break;
            }
            if (r.watch) rep.data_w[r.path].insert(s);
            out.data = it->second.data;
            out.stat = client_stat(it->second);
            break;
        case kind::get_children:
            if (it == rep.nodes.end()) {
                out.ec = zk_errc::no_node;
                break;
            }
            if (r.watch) rep.child_w[r.path].insert(s);
            out.children.assign(it->second.children.begin(), it->second.children.end());
            break;
        default: out.ec = zk_errc::unimplemented;
        }
        return out;
    }

    session& at(session_id s) { return sessions.at(s); }
};

zk_model::zk_model(int servers, std::int64_t epoch_ms) : impl_(std::make_shared<impl>(servers < 1 ? 1 : servers, epoch_ms)) {}

int zk_model::servers() const noexcept { return impl_->servers; }

session_id zk_model::open_session(int server, sim_clock::duration timeout, sim_clock::time_point now)
{
    auto& m = *impl_;
    const session_id id = m.next_session++;
    auto& s = m.sessions[id];
    s.server = server;
    s.timeout = timeout;
    s.touched = now;
    return id;
}

bool zk_model::alive(session_id s) const
{
    auto it = impl_->sessions.find(s);
    return it != impl_->sessions.end() && it->second.alive;
}

int zk_model::server_of(session_id s) const
{
    auto it = impl_->sessions.find(s);
    return it == impl_->sessions.end() ? -1 : it->second.server;
}

void zk_model::disconnect(session_id s)
{
    auto& m = *impl_;
    auto it = m.sessions.find(s);
    if (it == m.sessions.end() || it->second.server < 0) return;
    auto& ss = it->second;
    auto& rep = m.reps[static_cast<std::size_t>(ss.server)];
    for (auto& [p, who] : rep.data_w) who.erase(s);
    for (auto& [p, who] : rep.child_w) who.erase(s);
    // A request already in the leader's log stays there (applied, or to be); its reply is lost.
    for (auto& p : ss.queue)
        if (p.forwarded) m.log[p.entry].answer = false;
    ss.queue.clear();
    ss.out.clear();
    ss.server = -1;
}

zk_model::reconnect_result zk_model::reconnect(session_id s, int server, std::int64_t last_zxid_seen,
                                               const std::vector<std::string>& data_watches,
                                               const std::vector<std::string>& exist_watches,
                                               const std::vector<std::string>& child_watches, sim_clock::time_point now)
{
    auto& m = *impl_;
    auto& rep = m.reps[static_cast<std::size_t>(server)];
    if (!rep.reaches_leader) return {};
    if (rep.zxid < last_zxid_seen) return {};
    auto it = m.sessions.find(s);
    if (it == m.sessions.end() || !it->second.alive) return {true, true};
    auto& ss = it->second;
    if (ss.server >= 0) disconnect(s);
    ss.server = server;
    ss.touched = now;
    // SetWatches (DataTree.setWatches), against this server's tree.
    auto event = [&](event_type t, const std::string& p) {
        message msg;
        msg.is_event = true;
        msg.e = {t, p};
        ss.out.push_back(std::move(msg));
    };
    for (const auto& p : data_watches) {
        auto n = rep.nodes.find(p);
        if (n == rep.nodes.end()) event(event_type::deleted, p);
        else if (n->second.st.mzxid > last_zxid_seen) event(event_type::changed, p);
        else rep.data_w[p].insert(s);
    }
    for (const auto& p : exist_watches) {
        auto n = rep.nodes.find(p);
        if (n != rep.nodes.end()) event(event_type::created, p);
        else rep.data_w[p].insert(s);
    }
    for (const auto& p : child_watches) {
        auto n = rep.nodes.find(p);
        if (n == rep.nodes.end()) event(event_type::deleted, p);
        else if (n->second.st.pzxid > last_zxid_seen) event(event_type::child, p);
        else rep.child_w[p].insert(s);
    }
    return {true, false};
}

void zk_model::touch(session_id s, sim_clock::time_point now)
{
    auto& m = *impl_;
    auto it = m.sessions.find(s);
    if (it == m.sessions.end() || !it->second.alive || it->second.server < 0) return;
    if (!m.reps[static_cast<std::size_t>(it->second.server)].reaches_leader) return;
    it->second.touched = now;
}

std::vector<session_id> zk_model::expire_due(sim_clock::time_point now)
{
    auto& m = *impl_;
    std::vector<session_id> out;
    for (auto& [id, s] : m.sessions)
        if (s.alive && now >= s.touched + s.timeout) out.push_back(id);
    for (auto id : out) {
        request r;
        r.type = kind::close;
        const auto i = m.lead(id, r, now);
        m.log[i].answer = false;
        m.catch_up_leader();
    }
    return out;
}

std::optional<sim_clock::time_point> zk_model::next_expiry() const
{
    std::optional<sim_clock::time_point> t;
    for (const auto& [id, s] : impl_->sessions)
        if (s.alive && (!t || s.touched + s.timeout < *t)) t = s.touched + s.timeout;
    return t;
}

void zk_model::submit(session_id s, std::uint64_t tag, request r, sim_clock::time_point now)
{
    auto& m = *impl_;
    auto& ss = m.at(s);
    assert(ss.server >= 0);
    impl::pending p;
    p.tag = tag;
    p.r = std::move(r);
    ss.queue.push_back(std::move(p));
    touch(s, now);
}

bool zk_model::can_step_session(session_id s) const
{
    auto& m = *impl_;
    auto it = m.sessions.find(s);
    if (it == m.sessions.end() || it->second.server < 0 || it->second.queue.empty()) return false;
    const auto& p = it->second.queue.front();
    if (p.forwarded) return false;  // its reply comes when the server applies it
    if (!p.r.is_write()) return true;
    return m.reps[static_cast<std::size_t>(it->second.server)].reaches_leader;
}

void zk_model::step_session(session_id s, sim_clock::time_point now)
{
    auto& m = *impl_;
    if (!can_step_session(s)) return;
    auto& ss = m.at(s);
    auto& p = ss.queue.front();
    const auto server = static_cast<std::size_t>(ss.server);
    if (!p.r.is_write()) {
        message msg;
        msg.r = m.read(server, s, p.r);
        msg.r.tag = p.tag;
        ss.queue.pop_front();
        ss.out.push_back(std::move(msg));
        return;
    }
    if (p.r.type != kind::sync && p.r.type != kind::close && !m.sessions.at(s).alive) {
        // The leader no longer knows the session: the server answers expired.
        message msg;
        msg.r.tag = p.tag;
        msg.r.ec = zk_errc::session_expired;
        ss.queue.pop_front();
        ss.out.push_back(std::move(msg));
        return;
    }
    touch(s, now);
    p.forwarded = true;
    p.entry = m.lead(s, p.r, now);
    m.catch_up_leader();
}

bool zk_model::can_step_server(int server) const
{
    const auto& m = *impl_;
    if (server <= 0 || server >= m.servers) return false;
    const auto& rep = m.reps[static_cast<std::size_t>(server)];
    return rep.reaches_leader && rep.applied < m.log.size();
}

void zk_model::step_server(int server)
{
    if (!can_step_server(server)) return;
    impl_->apply_next(static_cast<std::size_t>(server));
}

std::deque<message>& zk_model::outbox(session_id s)
{
    auto it = impl_->sessions.find(s);
    if (it == impl_->sessions.end()) return impl_->no_outbox;
    return it->second.out;
}

void zk_model::set_reaches_leader(int server, bool up)
{
    if (server <= 0 || server >= impl_->servers) return;
    impl_->reps[static_cast<std::size_t>(server)].reaches_leader = up;
}

bool zk_model::reaches_leader(int server) const
{
    if (server < 0 || server >= impl_->servers) return false;
    return impl_->reps[static_cast<std::size_t>(server)].reaches_leader;
}

void zk_model::restart(int server)
{
    auto& m = *impl_;
    if (server <= 0 || server >= m.servers) return;
    for (auto& [id, s] : m.sessions)
        if (s.server == server) disconnect(id);
    auto& rep = m.reps[static_cast<std::size_t>(server)];
    rep.data_w.clear();
    rep.child_w.clear();
    if (rep.reaches_leader)
        while (rep.applied < m.log.size()) m.apply_next(static_cast<std::size_t>(server));
}

void zk_model::deny_create(const std::string& dir) { impl_->denied.insert(dir); }
void zk_model::deny_write(const std::string& path) { impl_->write_denied.insert(path); }

void zk_model::seed_persistent(const std::string& path, const std::string& data)
{
    auto& m = *impl_;
    m.catch_up_leader();
    impl::entry e;
    e.zxid = m.next_zxid++;
    impl::view v{m.leader().nodes, {}};
    multi_op op = multi_op::create(path, data, create_mode::persistent);
    multi_result res;
    if (m.prep(v, 0, op, e.zxid, m.epoch_ms, e.changes, res)) {
        --m.next_zxid;
        return;
    }
    m.log.push_back(std::move(e));
    m.catch_up_leader();
}

void zk_model::reap_containers()
{
    auto& m = *impl_;
    m.catch_up_leader();
    std::vector<std::string> empty;
    for (const auto& [p, n] : m.leader().nodes)
        if (n.container && n.children.empty() && n.st.cversion > 0) empty.push_back(p);
    for (const auto& p : empty) {
        impl::entry e;
        e.zxid = m.next_zxid++;
        change c;
        c.t = change::type::remove;
        c.path = p;
        e.changes.push_back(std::move(c));
        m.log.push_back(std::move(e));
        m.catch_up_leader();
    }
}

std::vector<std::string> zk_model::nodes() const
{
    std::vector<std::string> out;
    for (const auto& [p, n] : impl_->reps[0].nodes) out.push_back(p);
    return out;
}

std::optional<sim_clock::time_point> zk_model::expiry_of(session_id s) const
{
    auto it = impl_->sessions.find(s);
    if (it == impl_->sessions.end() || !it->second.alive) return std::nullopt;
    return it->second.touched + it->second.timeout;
}

std::vector<std::string> zk_model::children_of(const std::string& path) const
{
    auto& nodes = impl_->reps[0].nodes;
    auto it = nodes.find(path);
    if (it == nodes.end()) return {};
    return {it->second.children.begin(), it->second.children.end()};
}

void zk_model::on_commit(std::function<void(const std::string&, const std::string&, bool)> f) { impl_->committed = std::move(f); }

std::optional<zklock::stat> zk_model::stat_of(const std::string& path) const
{
    auto& nodes = impl_->reps[0].nodes;
    auto it = nodes.find(path);
    if (it == nodes.end()) return std::nullopt;
    return client_stat(it->second);
}

bool zk_model::is_container(const std::string& path) const
{
    auto& nodes = impl_->reps[0].nodes;
    auto it = nodes.find(path);
    return it != nodes.end() && it->second.container;
}

std::string zk_model::data_of(const std::string& path) const
{
    auto& nodes = impl_->reps[0].nodes;
    auto it = nodes.find(path);
    return it == nodes.end() ? std::string() : it->second.data;
}

std::int64_t zk_model::last_zxid() const noexcept { return impl_->reps[0].zxid; }

}  // namespace zklock::sim
