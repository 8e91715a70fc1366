# The ZooKeeper C client inside libzklock: what configure checks before it is sealed, and the rule
# that seals it (cmake/seal_zookeeper.cmake).
#
# zklock drives the single-threaded C client and owns its socket calls (src/bridge/client_io.hpp),
# so it relies on how the client does its I/O. Configure refuses a client it has not checked:
#   * its version must lie in the range tested in CI (ZKLOCK_ZOOKEEPER_TESTED_RANGE);
#   * the calls it makes that can touch its socket must be ones the seam handles (socket, close,
#     send, recv, poll, read) or ones that pass through unchanged (connect, the socket options,
#     getpeername, fcntl); a client that read with readv or recvmsg would lose replies;
#   * no fortified variant of those (_FORTIFY_SOURCE's __recv_chk, __read_chk, __poll_chk, ...):
#     the seam would not see the call;
#   * and it must make the ones the seam relies on (socket, close, send, recv).

include(${CMAKE_CURRENT_LIST_DIR}/zk_api_names.cmake)

# The versions CI builds and tests against: Debian 12's 3.8.0 and Debian 13's 3.9.3.
set(ZKLOCK_ZOOKEEPER_TESTED_MIN 3.8.0)
set(ZKLOCK_ZOOKEEPER_TESTED_BELOW 3.10)

# Calls that can reach a socket: the seam's, the ones that pass through, and the rest (refused).
set(ZKLOCK_SEAM_CALLS socket close send recv poll read)
set(ZKLOCK_SEAM_REQUIRED socket close send recv)
set(ZKLOCK_SEAM_PASSING connect getsockopt setsockopt getpeername getsockname fcntl fcntl64)
set(ZKLOCK_SEAM_REFUSED accept accept4 bind dup dup2 dup3 epoll_create epoll_create1 epoll_ctl
  epoll_pwait epoll_wait ioctl listen ppoll pread pread64 preadv preadv2 pselect pwrite pwrite64
  pwritev pwritev2 readv recvfrom recvmmsg recvmsg select sendfile sendfile64 sendmmsg sendmsg sendto
  shutdown socketpair splice write writev)

# Refuses a client version outside the tested range; WHERE names the client in the message.
function(zklock_check_zookeeper_version version where)
  if(NOT version)
    message(FATAL_ERROR "zklock: cannot read the ZooKeeper C client's version (zookeeper_version.h of ${where})")
  endif()
  if(version VERSION_LESS ZKLOCK_ZOOKEEPER_TESTED_MIN OR NOT version VERSION_LESS ZKLOCK_ZOOKEEPER_TESTED_BELOW)
    message(FATAL_ERROR "zklock: the ZooKeeper C client found is ${version} (${where}); zklock drives "
      "the client's socket calls itself and is tested with ${ZKLOCK_ZOOKEEPER_TESTED_MIN} up to, not "
      "including, ${ZKLOCK_ZOOKEEPER_TESTED_BELOW} (Debian 12's 3.8.0, Debian 13's 3.9.3). Point "
      "CMAKE_PREFIX_PATH at a client in that range (scripts/fetch-zk-client.sh fetches Debian 13's), "
      "or ZKLOCK_ZK_SOURCE at such a source release.")
  endif()
endfunction()

# zklock_check_socket_calls(WHAT VERSION PREFIX UNDEFINED...): refuses a client whose objects
# (the names they need, UNDEFINED) make a socket call the seam does not handle, a fortified
# variant (_FORTIFY_SOURCE: __recv_chk, __read_chk, __poll_chk, ...) of a socket call, or, with
# PREFIX "zklock_cio_" (a client compiled with the seam's routing), a socket call that escaped
# the routing; and one that never makes the calls the seam relies on (PREFIX + socket, ...).
function(zklock_check_socket_calls what version prefix)
  set(undefined ${ARGN})
  list(REMOVE_DUPLICATES undefined)
  set(refusable ${ZKLOCK_SEAM_REFUSED})
  if(prefix)
    list(APPEND refusable ${ZKLOCK_SEAM_CALLS})
  endif()
  set(refused "")
  set(missing "")
  foreach(c IN LISTS undefined)
    if(c IN_LIST refusable)
      list(APPEND refused ${c})
    elseif(c MATCHES "^__(.+)_chk$")
      set(base ${CMAKE_MATCH_1})
      if(base IN_LIST ZKLOCK_SEAM_CALLS OR base IN_LIST ZKLOCK_SEAM_REFUSED OR base STREQUAL "fdelt")
        list(APPEND refused "${c} (the fortified ${base}, _FORTIFY_SOURCE)")
      endif()
    endif()
  endforeach()
  foreach(c IN LISTS ZKLOCK_SEAM_REQUIRED)
    if(NOT "${prefix}${c}" IN_LIST undefined)
      list(APPEND missing ${c})
    endif()
  endforeach()
  if(refused OR missing)
    set(why "")
    if(refused)
      list(JOIN refused ", " r)
      string(APPEND why " It calls ${r}, which zklock's seam does not handle.")
    endif()
    if(missing)
      list(JOIN missing ", " m)
      string(APPEND why " It never calls ${m}, so the seam would not be in its path.")
    endif()
    list(JOIN ZKLOCK_SEAM_CALLS ", " handled)
    message(FATAL_ERROR "zklock: the ZooKeeper C client ${version} (${what}) does its socket I/O in a "
      "way zklock has not checked.${why} The seam handles ${handled}.")
  endif()
  set(seen "")
  foreach(c IN LISTS ZKLOCK_SEAM_CALLS ZKLOCK_SEAM_PASSING)
    if("${prefix}${c}" IN_LIST undefined OR c IN_LIST undefined)
      list(APPEND seen ${c})
    endif()
  endforeach()
  list(JOIN seen " " seen)
  message(STATUS "zklock: ZooKeeper C client ${version}, its socket calls checked: ${seen}")
endfunction()

function(zklock_check_zookeeper_client archive version)
  zklock_check_zookeeper_version("${version}" "${archive}")
  zklock_nm_names(undefined "${CMAKE_NM}" UNDEFINED "${archive}")
  zklock_check_socket_calls("${archive}" "${version}" "" ${undefined})
endfunction()
