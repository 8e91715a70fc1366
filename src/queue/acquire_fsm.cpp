#include <zklock/detail/acquire_fsm.hpp>

#include "core/mutant.hpp"

#include <boost/asio/error.hpp>
#include <boost/container/small_vector.hpp>

#include <algorithm>

namespace zklock::detail {

grant_rule rule_of(const queue_policy& policy) noexcept
{
    return rule_of(policy.kind(), policy.permits);
}

grant_rule rule_of(node_kind kind, std::uint32_t permits) noexcept
{
    constexpr kind_set locks = kind_bit(node_kind::exclusive) | kind_bit(node_kind::shared);
    constexpr kind_set all = locks | kind_bit(node_kind::permit);
    switch (kind) {
    case node_kind::exclusive: return {all, 1, locks, true, true, true, false};
    case node_kind::shared: return {ZKLOCK_MUTANT(mutant::reader_passes_writer, kind_bit(node_kind::exclusive), kind_set{0}), 1, locks, true, true, false, false};
    case node_kind::permit: {
        const std::uint32_t window = ZKLOCK_MUTANT(mutant::one_permit_too_many, permits, permits + 1);
        return {kind_bit(node_kind::permit), window, kind_bit(node_kind::permit), false, false, false,
                ZKLOCK_MUTANT(mutant::permit_watches_one, window > 1, false)};
    }
    }
    return {};
}

verdict evaluate(const std::vector<queue_node>& q, std::size_t own, const queue_policy& policy)
{
    const grant_rule rule = rule_of(policy);
    if (rule.window == 0) return {true, 0};
    // The counted nodes before ours, nearest first: up to one past the window.
    std::vector<std::size_t> before;
    for (std::size_t i = own; i-- > 0 && before.size() <= rule.window;)
        if (rule.counts & kind_bit(q[i].kind)) before.push_back(i);
    if (before.size() < rule.window) return {true, 0};
    if (!rule.spread) return {false, before[rule.window - 1]};
    verdict v{false, before[0]};
    if (before.size() > rule.window) v.behind = true;
    else v.also.assign(before.begin() + 1, before.end());
    return v;
}

namespace {

// scan_queue on the listing's sorted index: the same result, by binary search; nullopt when a
// node shares our sequence number (then the pass decides).
std::optional<scan_result> scan_sorted(const listing& l, const queue_view& own, std::uint64_t own_id, const grant_rule& rule)
{
    scan_result r;
    r.size = l.children();
    const auto& ix = l.sorted();
    const auto& nodes = l.nodes();
    const auto it = std::lower_bound(ix.by_seq.begin(), ix.by_seq.end(), own.seq,
                                     [&](std::uint32_t i, std::int64_t s) { return nodes[i].seq < s; });
    // Our node: the one entry with our sequence number (sequence numbers are unique under a parent;
    // a node named to collide with ours is left to the pass, which orders such a tie as it always did).
    auto at = it;
    if (at != ix.by_seq.end() && nodes[*at].seq == own.seq &&
        ((at + 1 != ix.by_seq.end() && nodes[*(at + 1)].seq == own.seq) || l.name(nodes[*at]) != own.name))
        return std::nullopt;
    if (at != ix.by_seq.end() && nodes[*at].seq != own.seq) at = ix.by_seq.end();
    for (auto d = std::lower_bound(ix.by_id.begin(), ix.by_id.end(), std::pair<std::uint64_t, std::uint32_t>{own_id, 0});
         d != ix.by_id.end() && d->first == own_id; ++d)
        if (at == ix.by_seq.end() || d->second != *at) r.duplicates.push_back(l.name(nodes[d->second]));
    if (at == ix.by_seq.end()) return r;
    r.found = true;
    const auto pos = static_cast<std::size_t>(at - ix.by_seq.begin());
    // Nodes with our sequence number but another name count as before us, as in the pass.
    r.position = pos;
    r.has_successor = std::any_of(at + 1, ix.by_seq.end(), [&](std::uint32_t i) { return nodes[i].seq > own.seq; });
    r.recipe_mismatch = l.sorted(rule.compatible).before[pos] != pos;
    if (r.recipe_mismatch) return r;
    const auto& counted = l.sorted(rule.counts);
    const std::uint32_t before = counted.before[pos];
    if (rule.window == 0 || before < rule.window) {
        r.acquired = true;
        return r;
    }
    // A spread rule's waiter watches the nearest; any other the window-th nearest.
    const std::uint32_t pred = counted.positions[before - (rule.spread ? 1 : rule.window)];  // a sorted position
    if (rule.spread && before > rule.window) r.behind = true;
    else if (rule.spread)
        for (std::uint32_t k = 0; k + 1 < before; ++k) r.also.push_back(l.name(nodes[ix.by_seq[counted.positions[k]]]));
    const auto& w = nodes[ix.by_seq[pred]];
    r.watch = l.name(w);
    r.watch_kind = w.kind;
    r.watch_is_head = pred == 0;
    if (rule.lookahead && before > rule.window) {
        const auto& a = nodes[ix.by_seq[counted.positions[before - rule.window - 1]]];
        r.ahead = l.name(a);
        r.ahead_kind = a.kind;
    }
    return r;
}

// The k counted nodes nearest before ours, in one pass over an unsorted listing: a min-heap on
// the sequence number. Past the first k nodes, a node enters only if it is nearer than the
// farthest kept, which in a listing in no particular order is rare: one comparison per node.
class nearest {
public:
    explicit nearest(std::size_t k) : k_(k) {}
    void offer(const listing::node& n)
    {
        if (k_ == 0) return;
        if (heap_.size() < k_) {
            heap_.push_back(&n);
            std::push_heap(heap_.begin(), heap_.end(), later);
        } else if (n.seq > heap_.front()->seq) {
            std::pop_heap(heap_.begin(), heap_.end(), later);
            heap_.back() = &n;
            std::push_heap(heap_.begin(), heap_.end(), later);
        }
    }
    std::size_t size() const noexcept { return heap_.size(); }
    /// The farthest kept (the k-th nearest once k are kept).
    const listing::node* farthest() const noexcept { return heap_.front(); }
    /// The nearest kept (not empty).
    const listing::node* closest() const noexcept
    {
        return *std::max_element(heap_.begin(), heap_.end(), [](auto* a, auto* b) { return a->seq < b->seq; });
    }
    /// Every node kept, in no particular order.
    const auto& nodes() const noexcept { return heap_; }
    void drop_farthest()
    {
        std::pop_heap(heap_.begin(), heap_.end(), later);
        heap_.pop_back();
    }

private:
    static bool later(const listing::node* a, const listing::node* b) noexcept { return a->seq > b->seq; }
    std::size_t k_;
    boost::container::small_vector<const listing::node*, 4> heap_;  // no allocation for the usual windows
};

}  // namespace

scan_result scan_queue(const listing& l, std::string_view own_name, std::uint64_t own_id, const queue_policy& policy)
{
    scan_result r;
    r.size = l.children();
    const auto own = parse_queue_view(own_name);
    if (!own) return r;
    const grant_rule rule = rule_of(policy);
    // A listing that serves many acquires is sorted once; the first one scans it in one pass.
    l.count_scan();
    if (l.scans() > 1)
        if (auto sr = scan_sorted(l, *own, own_id, rule)) return *sr;
    std::int64_t head_seq = own->seq;
    // The `window` counted nodes nearest before ours, and with look-ahead the one before those
    // (a spread rule: whether there is one before those).
    nearest near(rule.window == 0 ? 0 : rule.window + (rule.lookahead || rule.spread ? 1 : 0));
    for (const auto& n : l.nodes()) {
        if (n.seq == own->seq && l.name(n) == own_name) {
            r.found = true;
            continue;
        }
        if (n.id == own_id) r.duplicates.push_back(l.name(n));
        head_seq = std::min(head_seq, n.seq);
        if (n.seq > own->seq) {
            r.has_successor = true;
            continue;
        }
        ++r.position;
        const kind_set bit = kind_bit(n.kind);
        if (!(rule.compatible & bit)) r.recipe_mismatch = true;
        if (rule.counts & bit) near.offer(n);
    }
    if (!r.found || r.recipe_mismatch) return r;
    if (rule.window == 0 || near.size() < rule.window) {
        r.acquired = true;
        return r;
    }
    if (rule.spread) {
        // The nearest is watched; behind the first waiter, that is all, and the first waiter
        // watches the others too.
        r.behind = near.size() > rule.window;
        if (r.behind) near.drop_farthest();
        const listing::node* nearest_node = near.closest();
        for (const listing::node* n : near.nodes())
            if (n != nearest_node && !r.behind) r.also.push_back(l.name(*n));
        r.watch = l.name(*nearest_node);
        r.watch_kind = nearest_node->kind;
        r.watch_is_head = nearest_node->seq == head_seq;
        return r;
    }
    if (near.size() > rule.window) {
        r.ahead = l.name(*near.farthest());
        r.ahead_kind = near.farthest()->kind;
        near.drop_farthest();
    }
    const listing::node* pred = near.farthest();
    r.watch = l.name(*pred);
    r.watch_kind = pred->kind;
    r.watch_is_head = pred->seq == head_seq;
    return r;
}

using ak = acquire_fsm::action_kind;

std::string permit_count_data(std::uint32_t permits) { return "zklock-semaphore permits=" + std::to_string(permits); }

namespace {
constexpr std::string_view mark_prefix = "zklock-released ";
}  // namespace

std::string handoff_mark(std::string_view node_name)
{
    std::string m(mark_prefix);
    m += node_name;
    return m;
}

bool is_handoff_mark(std::string_view data) noexcept { return data.starts_with(mark_prefix); }

namespace {
constexpr std::string_view downgrade_prefix = "zklock-downgraded ";
}  // namespace

std::string downgrade_mark(std::string_view owner)
{
    std::string m(downgrade_prefix);
    m += owner;
    return m;
}

bool is_downgrade_mark(std::string_view data) noexcept { return data.starts_with(downgrade_prefix); }

acquire_fsm::acquire_fsm(std::string dir, queue_policy policy, std::uint64_t attempt_id, bool try_only)
    : acquire_fsm(std::make_shared<const std::string>(std::move(dir)), policy, attempt_id, try_only)
{
}

acquire_fsm::acquire_fsm(std::shared_ptr<const std::string> dir, queue_policy policy, std::uint64_t attempt_id, bool try_only)
    : dir_(std::move(dir)), id_(attempt_id), policy_(policy),
      try_only_(try_only), count_verified_(policy.kind() != node_kind::permit || policy.count_known)
{
}

acquire_fsm::action acquire_fsm::start()
{
    if (policy_.kind() == node_kind::permit && policy_.permits == 0) return finish(errc::invalid_argument);
    return count_verified_ ? create() : read_count();
}

acquire_fsm::action acquire_fsm::read_count(error_code why)
{
    if (++count_tries_ > max_count_tries) return finish(why ? why : error_code(errc::permit_mismatch));
    state_ = state::reading_count;
    return {ak::read_count, *dir_, {}, {}};
}

acquire_fsm::action acquire_fsm::on_count_read(error_code ec, const std::string& data, std::int32_t version)
{
    if (state_ != state::reading_count) return {};
    if (!ec) {
        if (data.empty() || is_handoff_mark(data)) {
            // Created as a parent by someone (or last used by a mutex, which leaves its handoff
            // mark): store ours, if nobody does in between.
            state_ = state::claiming_count;
            action a{ak::claim_count, *dir_, {}, {}};
            a.data = permit_count_data(policy_.permits);
            a.version = version;
            return a;
        }
        if (ZKLOCK_MUTANT(mutant::permit_count_unchecked, data != permit_count_data(policy_.permits),
                          !data.starts_with("zklock-semaphore permits=")))
            return finish(errc::permit_mismatch);
        count_verified_ = true;
        return create();
    }
    if (ec == zk_errc::no_node) {
        if (++parent_retries_ > max_parent_retries) return finish(ec);
        state_ = state::creating_parents;
        return {ak::create_parents, *dir_, {}, {}};
    }
    if (auto a = retry_or_lost(ec, state::reading_count)) return *a;
    return finish(ec);
}

acquire_fsm::action acquire_fsm::on_count_claimed(error_code ec)
{
    if (state_ != state::claiming_count) return {};
    if (!ec) {
        count_verified_ = true;
        return create();
    }
    // Someone wrote first, or the path went: read again.
    if (ec == zk_errc::bad_version || ec == zk_errc::no_node) return read_count();
    if (auto a = retry_or_lost(ec, state::reading_count)) return *a;
    return finish(ec);
}

acquire_fsm::action acquire_fsm::create()
{
    state_ = state::creating;
    return {ak::create, join_path(*dir_, node_prefix(*policy_.what, id_, policy_.marker)), {}, {}};
}

acquire_fsm::action acquire_fsm::list()
{
    state_ = state::listing;
    action a{ak::list, *dir_, {}, {}};
    a.sync = own_unknown_;
    return a;
}

acquire_fsm::extras& acquire_fsm::more()
{
    if (!extras_) extras_ = std::make_unique<extras>();
    return *extras_;
}

const shared_path& acquire_fsm::ahead() const noexcept { return ahead_; }

acquire_fsm::action acquire_fsm::watch()
{
    state_ = state::watching;
    also_gone_ = false;
    action a{ak::watch, watched_.str(), {}, {}, own_watched_};
    if (extras_) a.also = extras_->also;
    return a;
}

acquire_fsm::action acquire_fsm::remove()
{
    state_ = state::removing;
    return {ak::remove, own_, {}, {}};
}

acquire_fsm::action acquire_fsm::finish(error_code ec)
{
    state_ = state::done;
    return {ak::done, {}, ec, {}};
}

std::optional<acquire_fsm::action> acquire_fsm::retry_or_lost(const error_code& ec, state resume)
{
    if (is_retryable(ec)) return wait_connected(resume);
    if (ends_session(ec)) return on_session_lost(ec);
    return std::nullopt;
}

acquire_fsm::action acquire_fsm::wait_connected(state resume)
{
    state_ = state::waiting_connected;
    resume_ = resume;
    return {ak::wait_connected, {}, {}, {}};
}

// A non-retryable error with our node in place: take the node away first, then report.
acquire_fsm::action acquire_fsm::fail(error_code ec)
{
    if (!abort_) abort_ = ec;
    return own_.empty() ? finish(abort_) : remove();
}

acquire_fsm::action acquire_fsm::on_create(error_code ec, std::string created_path, std::int64_t czxid,
                                           error_code list_ec, const std::vector<std::string>& children)
{
    return on_created(ec, std::move(created_path), czxid, list_ec, listing(children));
}

acquire_fsm::action acquire_fsm::on_created(error_code ec, std::string created_path, std::int64_t czxid,
                                            error_code list_ec, const listing& children)
{
    if (state_ != state::creating) return {};
    if (!ec) {
        own_ = std::move(created_path);
        czxid_ = czxid;
        own_unknown_ = false;
        if (abort_) return remove();
        if (!list_ec) return evaluate_queue(children);
        if (is_retryable(list_ec)) return wait_connected(state::listing);
        return list();
    }
    if (ec == zk_errc::no_node) {
        if (abort_) return finish(abort_);
        if (++parent_retries_ > max_parent_retries) return finish(ec);
        // The lock path is gone (a container the server removed once empty): a semaphore stores
        // its count again before queueing.
        count_verified_ = policy_.kind() != node_kind::permit;
        state_ = state::creating_parents;
        return {ak::create_parents, *dir_, {}, {}};
    }
    if (is_retryable(ec)) {
        // The server may have created the node and the reply was lost: never create blindly again;
        // list first and look for our attempt id.
        own_unknown_ = true;
        return wait_connected(state::listing);
    }
    if (ends_session(ec)) return on_session_lost(ec);
    return finish(abort_ ? abort_ : ec);
}

acquire_fsm::action acquire_fsm::on_parents_created(error_code ec)
{
    if (state_ != state::creating_parents) return {};
    if (abort_) return finish(abort_);
    if (!ec || ec == zk_errc::node_exists) return count_verified_ ? create() : read_count();
    if (is_retryable(ec)) {
        state_ = state::waiting_connected;
        resume_ = state::creating_parents;
        return {ak::wait_connected, {}, {}, {}};
    }
    if (ends_session(ec)) return on_session_lost(ec);
    return finish(ec);
}

acquire_fsm::action acquire_fsm::find_own(const listing& children)
{
    // Nodes named with our attempt id, oldest first. Each is ours only if ZooKeeper says our
    // session owns it (stat_candidate, on_stat): an id can be forged, or shared by a process that
    // forked with us.
    std::vector<const listing::node*> ours;
    for (const auto& n : children.nodes())
        if (n.id == id_ && n.kind == policy_.kind()) ours.push_back(&n);
    std::sort(ours.begin(), ours.end(), [](auto* a, auto* b) { return a->seq < b->seq; });
    auto& candidates = more().candidates;
    candidates.clear();
    for (auto* n : ours) candidates.push_back(join_path(*dir_, children.name(*n)));
    return stat_candidate();
}

acquire_fsm::action acquire_fsm::stat_candidate()
{
    if (!extras_ || extras_->candidates.empty()) {
        // The create was never applied: the connection went before the server took it.
        own_unknown_ = false;
        if (abort_) return finish(abort_);
        if (++lost_creates_ >= max_lost_creates) return finish(errc::request_dropped);
        auto a = create();
        a.retry = true;
        return a;
    }
    own_ = std::move(extras_->candidates.front());
    extras_->candidates.erase(extras_->candidates.begin());
    state_ = state::statting;
    return {ak::stat_node, own_, {}, {}};
}

acquire_fsm::action acquire_fsm::grant(grant_basis basis, bool listed_successor)
{
    by_listing_ = basis == grant_basis::listing;
    listed_successor_ = by_listing_ && listed_successor;
    fast_ = !by_listing_;
    marked_ = basis == grant_basis::handoff_mark;
    action a = finish({});
    // A semaphore's waiter behind us may be watching our node (the first waiter's successor):
    // our write tells it that it is the first waiter now. Only a listing that showed nobody after
    // us spares it: anyone who queued later saw us among the holders in its own listing.
    a.touch = rule_of(policy_).spread && (!by_listing_ || listed_successor);
    return a;
}

acquire_fsm::action acquire_fsm::evaluate_queue(const listing& children, bool arming)
{
    const std::string_view own_name = base_name(own_);
    const grant_rule rule = rule_of(policy_);
    auto r = scan_queue(children, own_name, id_, policy_);
    if (!r.found) {
        // Our node is gone although our session lives: someone deleted it.
        own_.clear();
        return finish(abort_ ? abort_ : error_code(errc::lock_lost));
    }
    std::vector<std::string> duplicates;
    for (auto d : r.duplicates) duplicates.push_back(join_path(*dir_, d));
    position_ = r.position;
    action a;
    if (r.recipe_mismatch) {
        a = fail(errc::recipe_mismatch);
    } else if (r.acquired) {
        a = grant(grant_basis::listing, r.has_successor);
    } else if (try_only_) {
        abort_ = errc::would_block;
        a = remove();
    } else if (arming && !watch_spent_ && r.watch == base_name(watched_)) {
        // A look-ahead listing, and the node we wait on is still there (its watch with it): our
        // own node has been watched since before this listing.
        listed_size_ = r.size;
        if (r.watch_is_head) {
            // Nothing older than it exists, and nothing can appear: its deletion grants us.
            watched_clear_ = own_watched_ = true;
            clear_ahead();
        } else {
            ahead_ = shared_path(join_path(*dir_, r.ahead));  // someone before it left: watch the new one ahead
            ahead_kind_ = r.ahead_kind;
        }
        a = wait_event();
    } else {
        if (std::string next = join_path(*dir_, r.watch); next != watched_.view()) {
            listed_version_ = 0;
            watched_ = shared_path(next);
        }
        behind_ = r.behind;
        if (extras_) extras_->also.clear();
        for (auto n : r.also) more().also.push_back(join_path(*dir_, n));
        // Head of our listing: nothing older can ever appear, so its deletion grants us the lock
        // (where the rule allows it: see grant_rule::head_handoff).
        watched_clear_ = r.watch_is_head && rule.head_handoff;
        // An exclusive node may leave with a handoff mark that says it was the head (where the
        // rule allows marks: not for permits, which are held by several nodes at once).
        watched_markable_ = !watched_clear_ && r.watch_kind == node_kind::exclusive && rule.marks;
        listed_size_ = r.size;
        // Our own node needs a watch only if this wait may end without any further request (a
        // mark read checks our node in the same round trip). A look-ahead's wait may: in a queue
        // of up to max_queue_for_early_own_watch its own watch goes out now, with the first watch,
        // so that arming (when the node ahead leaves, in the middle of a handoff) is one request,
        // not two; in a longer one arming sets it.
        own_watched_ = watched_clear_;
        clear_ahead();
        if (!watched_clear_ && !r.ahead.empty() && rule.lookahead) {
            ahead_ = shared_path(join_path(*dir_, r.ahead));
            ahead_kind_ = r.ahead_kind;
            own_watched_ = r.size <= max_queue_for_early_own_watch;
        }
        a = watch();
    }
    a.duplicates = std::move(duplicates);
    return a;
}

acquire_fsm::action acquire_fsm::on_children(error_code ec, const std::vector<std::string>& children)
{
    return on_listed(ec, listing(children));
}

acquire_fsm::action acquire_fsm::on_listed(error_code ec, const listing& children)
{
    if (state_ != state::listing && state_ != state::arming_list) return {};
    if (!ec) {
        if (own_unknown_) return find_own(children);
        if (abort_) return remove();
        return evaluate_queue(children, state_ == state::arming_list);
    }
    if (auto a = retry_or_lost(ec, state::listing)) return *a;
    if (ec == zk_errc::no_node && own_unknown_) {  // the directory is gone, and so is any node of ours
        own_unknown_ = false;
        return abort_ ? finish(abort_) : create();
    }
    return fail(ec);
}

acquire_fsm::action acquire_fsm::on_stat(error_code ec, std::int64_t czxid, bool ours)
{
    if (state_ != state::statting) return {};
    if (!ec && !ours) {
        // Another session's node that carries our attempt id: not ours, whatever its name says.
        // Leave it alone and look at the next candidate.
        own_.clear();
        return stat_candidate();
    }
    if (!ec) {
        czxid_ = czxid;
        own_unknown_ = false;
        if (extras_) extras_->candidates.clear();
        return abort_ ? remove() : list();
    }
    if (auto a = retry_or_lost(ec, state::statting)) return *a;
    if (ec == zk_errc::no_node) {
        // Gone between the listing and the stat: deleted by someone (ours or not, it is no longer
        // there to hold anything). Look at the next candidate.
        own_.clear();
        return stat_candidate();
    }
    // Another error (no_auth on a re-ACLed node...): we cannot tell which candidate is ours. The
    // driver deletes each one our session owns (exists(): ephemeralOwner), so none is left behind.
    action a = finish(abort_ ? abort_ : ec);
    if (extras_) a.duplicates = std::move(extras_->candidates);
    a.duplicates.push_back(std::move(own_));
    own_.clear();
    own_unknown_ = false;
    return a;
}

acquire_fsm::action acquire_fsm::wait_event()
{
    state_ = state::waiting;
    action a{ak::wait_event, {}, {}, {}};
    a.ahead = ahead().str();
    return a;
}

acquire_fsm::action acquire_fsm::on_watch_set(error_code ec, std::string_view data, std::int32_t version)
{
    if (state_ != state::watching) return {};
    if (abort_) return remove();
    if (!ec && also_gone_) return list();  // a holder the first waiter watches is gone
    if (!ec && behind_ && version > listed_version_) {
        // Written since we last listed: its owner may hold now (and we are the first waiter).
        listed_version_ = version;
        return list();
    }
    if (!ec && policy_.kind() == node_kind::shared && is_downgrade_mark(data)) {
        // The writer we wait on holds a read lock now. Granted, once we know our own node is still
        // there: its watch's reply comes before this one (the driver sends it first). Asked for
        // once; if it is not in place even so, wait for the writer's node to go, as before.
        if (!own_confirmed_) {
            if (own_watched_) return wait_event();
            own_watched_ = true;
            return watch();
        }
        return grant(grant_basis::downgrade_mark);
    }
    if (!ec) return wait_event();
    if (ec == zk_errc::no_node) return list();  // it went before we could watch it: look again
    if (auto a = retry_or_lost(ec, state::listing)) return *a;
    return fail(ec);
}

acquire_fsm::action acquire_fsm::on_watch_fired(bool deleted, std::size_t queue_hint)
{
    if (state_ == state::arming_list || state_ == state::arming_mark) {
        // The look-ahead's reply is still to come, and tells (see evaluate_queue, on_mark_read).
        watch_spent_ = true;
        watch_gone_ = watch_gone_ || deleted;
        return {};
    }
    if (state_ != state::waiting) return {};
    if (abort_) return remove();
    if (deleted && watched_clear_ && !own_confirmed_) {
        // Nothing older than us is left, but we cannot tell that our own node still exists (its
        // watch is not confirmed: it failed, or it fired for a data change and is being set
        // again): the listing says.
        return list();
    }
    if (ZKLOCK_MUTANT(mutant::grant_on_any_deletion, deleted && watched_clear_, deleted)) {
        // Everything before the watched node was gone, and now it is too: we are at the head
        // (exclusive) or behind no writer (shared).
        return grant(grant_basis::head_deleted);
    }
    // Its data changed (a revocation request, any write): watch it again. Behind a semaphore's
    // first waiter it is most likely that waiter's grant: list at once (if the listing still shows
    // us behind it, the version the watch then reads is newer, and we list once more).
    if (!deleted) return behind_ ? list() : watch();
    if (watched_markable_ && std::max(queue_hint, listed_size_) >= ZKLOCK_MARK_QUEUE(min_queue_for_mark)) {
        // Did it leave as the head? Two small reads instead of listing a long queue.
        state_ = state::reading_mark;
        return {ak::read_mark, *dir_, {}, {}};
    }
    return list();
}

bool acquire_fsm::release_writes_mark(std::size_t queue_hint) noexcept
{
    return queue_hint == 0 || queue_hint >= ZKLOCK_MARK_QUEUE(min_queue_for_mark) / 2;
}

acquire_fsm::action acquire_fsm::on_ahead_fired(std::size_t queue_hint)
{
    if (state_ != state::waiting || abort_ || watched_clear_ || ahead().empty()) return {};
    // The node before the one we wait on is gone: find out, while our predecessor (maybe) holds,
    // whether it is now the head. Our own node gets its watch first (the driver sends it ahead of
    // the read), so that an armed wait hears of our node's deletion before that of the node we
    // wait on.
    watch_spent_ = watch_gone_ = false;
    own_watched_ = true;
    action a{ak::arm, *dir_, {}, {}};
    a.mark = ahead_kind_ == node_kind::exclusive && std::max(queue_hint, listed_size_) >= ZKLOCK_MARK_QUEUE(min_queue_for_mark);
    state_ = a.mark ? state::arming_mark : state::arming_list;
    return a;
}

acquire_fsm::action acquire_fsm::on_also_fired()
{
    if (state_ == state::watching) {
        also_gone_ = true;  // on_watch_set lists
        return {};
    }
    if (state_ != state::waiting || !extras_ || extras_->also.empty()) return {};
    if (abort_) return remove();
    return list();
}

touch_next after_touch(const error_code& ec, bool wrote_back) noexcept
{
    if (!ec) return touch_next::done;
    if (is_retryable(ec)) return touch_next::retry;
    if (ec == zk_errc::bad_version && !wrote_back) return touch_next::write_back;
    return touch_next::done;  // gone with its node or its session, or someone else's write was heard
}

acquire_fsm::action acquire_fsm::on_own_watch(bool set)
{
    own_confirmed_ = set;
    return {};
}

acquire_fsm::action acquire_fsm::on_mark_read(error_code ec, const std::string& data, std::int64_t mzxid,
                                              std::int64_t pzxid, bool own_exists)
{
    if (state_ == state::arming_mark) {
        if (!ec && !own_exists) {
            own_.clear();
            return finish(abort_ ? abort_ : error_code(errc::lock_lost));
        }
        if (abort_) return remove();
        if (!ec && mzxid == pzxid) {
            // As in the waiter's rule (docs/handoff.md): the data was written by the release of the
            // node it names, as the head, in the transaction of the path's last child change.
            if (!watch_spent_ && data == handoff_mark(base_name(ahead()))) {
                // The node before ours-to-wait-on left as the head, and the latter was still there
                // when this read was served (its deletion would be a later child change; and its
                // event would have come first): it is the head now.
                watched_clear_ = true;
                clear_ahead();
                return wait_event();
            }
            if (watch_gone_ && own_confirmed_ && data == handoff_mark(base_name(watched_))) {
                // The node we wait on left as the head (its deletion event came before this reply).
                return grant(grant_basis::handoff_mark);
            }
        }
        if (auto a = retry_or_lost(ec, state::listing)) return *a;
        if (watch_spent_) return list();
        // Nothing learned (a child change came between, or the node ahead left without a mark):
        // wait as without the look-ahead; the deletion of the node we wait on decides.
        clear_ahead();
        return wait_event();
    }
    if (state_ != state::reading_mark) return {};
    if (!ec && !own_exists) {  // someone deleted our node
        own_.clear();
        return finish(abort_ ? abort_ : error_code(errc::lock_lost));
    }
    if (abort_) return remove();
    if (!ec) {
        // The mark names the node we watched (whose deletion we saw; both reads were sent after
        // it, and our own node still exists), and it was written in the transaction of the path's
        // last child change: that node's release as the head. Everything up to it is gone.
        if (mzxid == pzxid && data == handoff_mark(base_name(watched_))) return grant(grant_basis::handoff_mark);
        return list();
    }
    if (auto a = retry_or_lost(ec, state::listing)) return *a;
    return list();  // no_auth (a path we may not read), no_node...: the listing says what to do
}

acquire_fsm::action acquire_fsm::on_removed(error_code ec)
{
    if (state_ != state::removing) return {};
    if (!ec || ec == zk_errc::no_node || ends_session(ec)) {
        own_.clear();
        return finish(abort_);
    }
    if (is_retryable(ec)) return wait_connected(state::removing);
    // Anything else (no_auth on a node someone re-ACLed): nothing more we can do about it.
    return finish(abort_);
}

acquire_fsm::action acquire_fsm::on_own_deleted()
{
    switch (state_) {
    case state::listing:
    case state::statting:
    case state::watching:
    case state::waiting:
    case state::reading_mark:
    case state::arming_list:
    case state::arming_mark:
    case state::waiting_connected: break;
    default: return {};  // not created yet, being removed by us, or done
    }
    if (own_.empty() || own_unknown_) return {};
    own_.clear();
    return finish(abort_ ? abort_ : error_code(errc::lock_lost));
}

acquire_fsm::action acquire_fsm::on_connected()
{
    if (state_ != state::waiting_connected) return {};
    switch (resume_) {
    case state::reading_count:
        if (abort_) return finish(abort_);
        return read_count(zk_errc::connection_loss);
    case state::creating_parents:
        if (abort_) return finish(abort_);
        state_ = state::creating_parents;
        return {ak::create_parents, *dir_, {}, {}};
    case state::statting:  // the candidate is not known to be ours yet: ask again (on_stat acts on abort_)
        state_ = state::statting;
        return {ak::stat_node, own_, {}, {}};
    case state::removing:
        return remove();
    case state::listing:
    default:
        if (abort_ && !own_unknown_) return own_.empty() ? finish(abort_) : remove();
        return list();
    }
}

acquire_fsm::action acquire_fsm::on_cancel(error_code reason)
{
    if (state_ == state::done || abort_) return {};
    abort_ = reason;
    switch (state_) {
    case state::idle:
    case state::reading_count:
    case state::claiming_count:
    case state::creating_parents: return finish(abort_);  // nothing of ours exists: the reply is ignored
    case state::waiting_connected:
        // Nothing of ours exists yet either: no need to wait for the connection.
        if (resume_ == state::reading_count || resume_ == state::creating_parents) return finish(abort_);
        return {};
    case state::waiting: return ZKLOCK_MUTANT(mutant::cancelled_node_left, remove(), finish(abort_));
    default: return {};  // a request is in flight (or we wait for the connection): act on its outcome
    }
}

acquire_fsm::action acquire_fsm::on_session_lost(error_code ec)
{
    if (state_ == state::done) return {};
    own_.clear();
    if (ec == zk_errc::session_expired) ec = errc::session_expired;
    else if (ec == zk_errc::closing) ec = errc::session_closed;
    return finish(abort_ ? abort_ : ec);
}

}  // namespace zklock::detail
