// Fuzz target: path and server-list validation, queue-node parsing and ordering. Whatever the
// bytes, nothing crashes, and what is accepted has the properties the rest of zklock relies on.
#include "fuzz_check.hpp"

#include <zklock/detail/path.hpp>
#include <zklock/detail/recipe.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

using namespace zklock;
using namespace zklock::detail;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string_view in(reinterpret_cast<const char*>(data), size);

    // A lock path we accept is absolute and canonical, and stays valid with a queue node below it.
    if (!validate_lock_path(in)) {
        FUZZ_CHECK(in.size() >= 2 && in.size() <= max_lock_path);
        FUZZ_CHECK(in.front() == '/' && in.back() != '/');
        FUZZ_CHECK(in.find("//") == std::string_view::npos);
        FUZZ_CHECK(in.find("/./") == std::string_view::npos && in.find("/../") == std::string_view::npos);
        FUZZ_CHECK(!in.ends_with("/.") && !in.ends_with("/.."));
        FUZZ_CHECK(in != "/zookeeper" && !in.starts_with("/zookeeper/"));
        FUZZ_CHECK(std::none_of(in.begin(), in.end(), [](char c) {
            return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
        }));
        FUZZ_CHECK(!base_name(in).empty());
        const std::string child = join_path(in, node_prefix(node_kind::exclusive, 1) + "0000000001");
        if (child.size() <= max_lock_path) FUZZ_CHECK(!validate_lock_path(child));  // (queue nodes may go past it)
        FUZZ_CHECK(base_name(child) == std::string_view(child).substr(in.size() + 1));
    }

    // A server list we accept has hosts and ports in range, no blanks or control characters.
    if (!validate_servers(in)) {
        const std::string_view hosts = in.substr(0, in.find('/'));
        FUZZ_CHECK(!hosts.empty());
        FUZZ_CHECK(hosts.find(':') != std::string_view::npos);
        FUZZ_CHECK(std::none_of(hosts.begin(), hosts.end(), [](char c) {
            return static_cast<unsigned char>(c) <= 0x20 || c == 0x7f;
        }));
        FUZZ_CHECK(hosts.front() != ',' && hosts.back() != ',' && hosts.find(",,") == std::string_view::npos);
    }
    // Every refused lock path names its rule; an accepted one has none.
    FUZZ_CHECK(lock_path_problem(in).empty() == !validate_lock_path(in));

    // A queue node that parses is zklock's "<kind>-<16 hex>-[marker]<sequence>" and round-trips,
    // or another library's "...<marker><sequence>"; the sequence is ZooKeeper's %010d of an int32.
    if (auto n = parse_queue_node(in)) {
        FUZZ_CHECK(n->name == in);
        FUZZ_CHECK(n->kind == node_kind::exclusive || n->kind == node_kind::shared || n->kind == node_kind::permit);
        FUZZ_CHECK(n->seq >= -2147483648LL && n->seq <= 2147483647LL);
        char seq[16];
        std::snprintf(seq, sizeof seq, "%010lld", static_cast<long long>(n->seq));
        FUZZ_CHECK(in.ends_with(seq));
        // Every node is some recipe's, of that recipe's kind.
        FUZZ_CHECK(n->what != nullptr && n->what->kind == n->kind);
        if (n->library == lock_library::zklock) {
            FUZZ_CHECK(n->id != 0 || in.substr(2, 16) == "0000000000000000");
            const bool old_name = in.size() == 19 + std::strlen(seq);
            bool marked = false;
            for (std::size_t m = 0; m < n->what->markers.size(); ++m)
                marked = marked || in == node_prefix(*n->what, n->id, m) + seq;
            FUZZ_CHECK(old_name ? in.starts_with(node_prefix(n->kind, n->id).substr(0, 19)) : marked);
        } else {
            FUZZ_CHECK(n->id == 0);  // another library's node never carries one of our attempt ids
            FUZZ_CHECK(n->kind != node_kind::permit);
            // The marker right before the sequence is one its recipe lists for that library.
            const std::string_view head = in.substr(0, in.size() - std::strlen(seq));
            bool listed = false;
            for (const auto& f : n->what->foreign) listed = listed || (head.ends_with(f.marker) && f.library == n->library);
            FUZZ_CHECK(listed);
        }
    }

    // The bytes as a child list: the queue holds only parseable names, in sequence order.
    std::vector<std::string> children;
    for (std::size_t start = 0; start <= in.size();) {
        std::size_t end = in.find('\n', start);
        if (end == std::string_view::npos) end = in.size();
        children.emplace_back(in.substr(start, end - start));
        start = end + 1;
    }
    const auto q = make_queue(children);
    FUZZ_CHECK(q.size() <= children.size());
    for (std::size_t i = 0; i < q.size(); ++i) {
        FUZZ_CHECK(parse_queue_node(q[i].name).has_value());
        if (i > 0) FUZZ_CHECK(q[i - 1].seq <= q[i].seq);
    }
    const auto parseable = static_cast<std::size_t>(std::count_if(children.begin(), children.end(), [](const std::string& c) {
        return parse_queue_node(c).has_value();
    }));
    FUZZ_CHECK(q.size() == parseable);
    return 0;
}
