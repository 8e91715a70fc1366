// The C client's log lines, as session_config::logger receives them: level and text.
#include "core/log_sink.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace zklock;
using namespace zklock::detail;

TEST_CASE("log: a C client line's level and text, one line")
{
    std::string_view text;
    CHECK(parse_client_line("2026-11-26 16:06:38,846:1234(0x7f12):ZOO_INFO@finalize_session_establishment@2866: "
                            "session establishment complete\n",
                            text) == log_level::info);
    CHECK(text == "finalize_session_establishment@2866: session establishment complete");
    CHECK(parse_client_line("t:1(0x1):ZOO_ERROR@handle_socket_error_msg@1: connection refused", text) == log_level::error);
    CHECK(text == "handle_socket_error_msg@1: connection refused");
    CHECK(parse_client_line("t:1(0x1):ZOO_WARN@zookeeper_interest@2: timeout", text) == log_level::warning);
    CHECK(parse_client_line("t:1(0x1):ZOO_DEBUG@send@3: xid", text) == log_level::debug);
    CHECK(parse_client_line("no tag at all", text) == log_level::info);
    CHECK(text == "no tag at all");
}

TEST_CASE("log: a sink delivers from its level up, with its session id, and contains a throwing logger")
{
    std::vector<std::string> seen;
    log_sink sink([&](log_level l, std::string_view m, const log_fields& f) {
        if (m == "throw") throw std::runtime_error("logger");
        seen.push_back(std::string(to_string(l)) + " " + std::string(f.source) + " " + std::to_string(f.session_id) + " " +
                       std::string(m));
    },
                  log_level::warning);
    sink.set_session_id(42);
    sink.event(log_level::info, "not wanted");
    sink.event(log_level::warning, "wanted");
    sink.client_line("t:1(0x1):ZOO_ERROR@f@1: bad");
    sink.client_line("t:1(0x1):ZOO_INFO@f@1: chatter");
    sink.event(log_level::error, "throw");
    CHECK(seen == std::vector<std::string>{"warning zklock 42 wanted", "error zookeeper 42 f@1: bad"});
    log_sink silent({}, log_level::debug);
    CHECK_FALSE(silent.wants(log_level::error));
}
