# The ZooKeeper C client inside libzklock: what configure checks before it is sealed, and the rule
# that seals it (cmake/seal_zookeeper.cmake).
#
# zklock drives the single-threaded C client and owns its socket calls (src/bridge/client_io.hpp),
# so it relies on how the client does its I/O. Configure refuses a client it has not checked:
#   * its version must lie in the range tested in CI (ZKLOCK_ZOOKEEPER_TESTED_RANGE);
#   * the calls it makes that can touch its socket must be ones the seam handles (socket, close,
#     send, recv, poll, read) or ones that pass through unchanged (connect, the socket options,
#     getpeername, fcntl); a client that read with readv or recvmsg would lose replies;
#   * and it must make the ones the seam relies on (socket, close, send, recv).

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

function(zklock_check_zookeeper_client archive version)
  if(NOT version)
    message(FATAL_ERROR "zklock: cannot read the ZooKeeper C client's version (zookeeper_version.h)")
  endif()
  if(version VERSION_LESS ZKLOCK_ZOOKEEPER_TESTED_MIN OR NOT version VERSION_LESS ZKLOCK_ZOOKEEPER_TESTED_BELOW)
    message(FATAL_ERROR "zklock: the ZooKeeper C client found is ${version} (${archive}); zklock drives "
      "the client's socket calls itself and is tested with ${ZKLOCK_ZOOKEEPER_TESTED_MIN} up to, not "
      "including, ${ZKLOCK_ZOOKEEPER_TESTED_BELOW} (Debian 12's 3.8.0, Debian 13's 3.9.3). Point "
      "CMAKE_PREFIX_PATH at a client in that range (scripts/fetch-zk-client.sh fetches Debian 13's).")
  endif()
  execute_process(COMMAND ${CMAKE_NM} -u --format=posix ${archive} OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "zklock: `${CMAKE_NM} -u ${archive}` failed")
  endif()
  string(REPLACE "\n" ";" lines "${out}")
  set(undefined "")
  foreach(l IN LISTS lines)
    if(l MATCHES "^([A-Za-z_][A-Za-z0-9_]*) U")
      list(APPEND undefined ${CMAKE_MATCH_1})
    endif()
  endforeach()
  list(REMOVE_DUPLICATES undefined)
  set(refused "")
  set(missing "")
  foreach(c IN LISTS ZKLOCK_SEAM_REFUSED)
    if(c IN_LIST undefined)
      list(APPEND refused ${c})
    endif()
  endforeach()
  foreach(c IN LISTS ZKLOCK_SEAM_REQUIRED)
    if(NOT c IN_LIST undefined)
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
    message(FATAL_ERROR "zklock: the ZooKeeper C client ${version} (${archive}) does its socket I/O in a "
      "way zklock has not checked.${why} The seam handles ${handled}.")
  endif()
  set(seen "")
  foreach(c IN LISTS ZKLOCK_SEAM_CALLS ZKLOCK_SEAM_PASSING)
    if(c IN_LIST undefined)
      list(APPEND seen ${c})
    endif()
  endforeach()
  list(JOIN seen " " seen)
  message(STATUS "zklock: ZooKeeper C client ${version}, its socket calls checked: ${seen}")
endfunction()
