// What the debug assertion of the lease's queries asks (src/core/executor_check.hpp).
#include "core/executor_check.hpp"

#include <doctest/doctest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>

#include <optional>

namespace asio = boost::asio;
using zklock::detail::running_on;

TEST_CASE("running_on: an io_context's executor and its strands say whether this thread runs them")
{
    asio::io_context io;
    const asio::any_io_executor plain = io.get_executor();
    // A tracked executor counts as work: the guard keeps the count above zero while they come and
    // go (the last one gone would stop the io_context), and lets run() end once the handlers ran.
    auto guard = asio::make_work_guard(io);
    const auto tracked = [&] {
        return asio::any_io_executor(asio::require(io.get_executor(), asio::execution::outstanding_work.tracked));
    };
    const asio::any_io_executor strand = asio::make_strand(io);
    const asio::any_io_executor erased_strand = asio::strand<asio::any_io_executor>(plain);
    CHECK(!running_on(plain));
    CHECK(!running_on(tracked()));
    CHECK(!running_on(strand));
    CHECK(!running_on(erased_strand));
    std::optional<bool> in_plain, in_tracked, in_strand, other_strand, in_erased;
    asio::post(plain, [&] {
        in_plain = running_on(plain);
        in_tracked = running_on(tracked());
        other_strand = running_on(strand);  // the io_context runs us, not the strand
    });
    asio::post(strand, [&] { in_strand = running_on(strand); });
    asio::post(erased_strand, [&] { in_erased = running_on(erased_strand); });
    asio::post(plain, [&] { guard.reset(); });
    io.run();
    CHECK(in_plain == true);
    CHECK(in_tracked == true);
    CHECK(in_strand == true);
    CHECK(other_strand == false);
    CHECK(in_erased == true);
}

TEST_CASE("running_on: an executor that cannot tell is taken on trust")
{
    asio::thread_pool pool(1);
    CHECK(running_on(pool.get_executor()));
    pool.join();
}
