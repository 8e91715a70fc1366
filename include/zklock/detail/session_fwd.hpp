// Type-erased entry points of the session, compiled in src/bridge/session.cpp. A session is held as
// its port (src/port/zk_port.hpp), what the operations talk to, and its control
// (src/port/session_control.hpp), what only the session object asks for: connect, close, state
// waits.
#pragma once

#include <zklock/types.hpp>

#include <boost/asio/any_completion_handler.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace zklock {
class watch;
}

namespace zklock::detail {

class zk_port;
class session_control;
class watch_state;
using session_ptr = std::shared_ptr<zk_port>;
template <class... Args> using handler = boost::asio::any_completion_handler<void(Args...)>;

using control_ptr = std::shared_ptr<session_control>;

void initiate_connect(session_ptr s, control_ptr c, handler<error_code> h);
void initiate_close(session_ptr s, control_ptr c, handler<error_code> h);
void initiate_wait_state(session_ptr s, control_ptr c, handler<error_code, session_state> h);
void initiate_create(session_ptr s, std::string path, std::string data, create_mode mode,
                     handler<error_code, std::string, zklock::stat> h);
void initiate_remove(session_ptr s, std::string path, std::int32_t version, handler<error_code> h);
void initiate_exists(session_ptr s, std::string path, handler<error_code, std::optional<zklock::stat>> h);
void initiate_watch_exists(session_ptr s, std::string path,
                           handler<error_code, std::optional<zklock::stat>, zklock::watch> h);
void initiate_get_data(session_ptr s, std::string path, handler<error_code, std::string, zklock::stat> h);
void initiate_watch_data(session_ptr s, std::string path,
                         handler<error_code, std::string, zklock::stat, zklock::watch> h);
void initiate_set_data(session_ptr s, std::string path, std::string data, std::int32_t version,
                       handler<error_code, zklock::stat> h);
void initiate_get_children(session_ptr s, std::string path, handler<error_code, std::vector<std::string>> h);
void initiate_watch_children(session_ptr s, std::string path,
                             handler<error_code, std::vector<std::string>, zklock::watch> h);
void initiate_multi(session_ptr s, std::vector<multi_op> ops, handler<error_code, std::vector<multi_result>> h);
void initiate_watch_wait(std::shared_ptr<watch_state> w, handler<error_code, watch_event> h);

}  // namespace zklock::detail
