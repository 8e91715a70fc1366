#include <zklock/detail/unique_function.hpp>

#include <doctest/doctest.h>

#include <array>
#include <memory>
#include <string>
#include <utility>
#include <vector>

using zklock::detail::unique_function;

namespace {

// Counts the live copies of a callable, so that every move and destruction is accounted for.
struct counted {
    std::shared_ptr<int> live;
    explicit counted(std::shared_ptr<int> l) : live(std::move(l)) { ++*live; }
    counted(counted&& o) noexcept : live(o.live) { ++*live; }
    counted(const counted& o) : live(o.live) { ++*live; }
    ~counted() { --*live; }
};

}  // namespace

TEST_CASE("unique_function: a small callable and its captures survive moves, and are destroyed once")
{
    auto live = std::make_shared<int>(0);
    {
        auto state = std::make_shared<std::string>("a");
        unique_function<std::string(int)> f = [c = counted(live), state](int n) { return *state + std::to_string(n); };
        CHECK(*live == 1);
        CHECK(f(1) == "a1");
        unique_function<std::string(int)> g = std::move(f);
        CHECK_FALSE(f);
        CHECK(g);
        CHECK(*live == 1);
        CHECK(g(2) == "a2");
        unique_function<std::string(int)> h;
        h = std::move(g);
        CHECK(*live == 1);
        CHECK(h(3) == "a3");
        // A vector that grows moves its elements: each one still calls its own callable.
        std::vector<unique_function<std::string(int)>> v;
        v.push_back(std::move(h));
        for (int i = 0; i < 20; ++i) v.push_back([i](int n) { return std::to_string(i * 100 + n); });
        CHECK(*live == 1);
        CHECK(v[0](4) == "a4");
        CHECK(v[20](5) == "1905");
        CHECK(state.use_count() == 2);
    }
    CHECK(*live == 0);
}

TEST_CASE("unique_function: a large callable is kept on the heap and moves without copying")
{
    auto live = std::make_shared<int>(0);
    {
        std::array<char, 256> big{};
        big[255] = 'z';
        unique_function<char()> f = [c = counted(live), big] { return big[255]; };
        CHECK(*live == 1);
        unique_function<char()> g = std::move(f);
        CHECK(*live == 1);
        CHECK(g() == 'z');
        g = nullptr;
        CHECK_FALSE(g);
        CHECK(*live == 0);
    }
    CHECK(*live == 0);
}

TEST_CASE("unique_function: move-only captures and arguments passed by value are moved through")
{
    auto p = std::make_unique<int>(7);
    unique_function<std::size_t(std::string, std::unique_ptr<int>)> f = [p = std::move(p)](std::string s, std::unique_ptr<int> q) {
        return s.size() + static_cast<std::size_t>(*p + *q);
    };
    std::string arg(100, 'x');
    CHECK(f(std::move(arg), std::make_unique<int>(3)) == 110);
}

TEST_CASE("unique_function: assigning over a full one destroys the old callable first")
{
    auto a = std::make_shared<int>(0), b = std::make_shared<int>(0);
    unique_function<void()> f = [c = counted(a)] {};
    unique_function<void()> g = [c = counted(b)] {};
    CHECK(*a == 1);
    CHECK(*b == 1);
    f = std::move(g);
    CHECK(*a == 0);
    CHECK(*b == 1);
    f = {};
    CHECK(*b == 0);
}
