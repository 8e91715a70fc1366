# Seals the ZooKeeper C client into one object for libzklock (run with cmake -P at build time by
# CMakeLists.txt; see cmake/ZooKeeperSeal.cmake for the checks made at configure time).
#
#   ARCHIVE  Debian's libzookeeper_st.a           OBJECT  the sealed object to write
#   HEADER   the header of sealed names to write  INCLUDE_DIR  where zookeeper/zookeeper.h is
#   AR, LD, NM, OBJCOPY  the tools
#
# 1. The archive's objects are linked into one (ld -r), so that the client's own calls between
#    its files are resolved inside it.
# 2. Its socket calls are renamed to the seam's (src/bridge/client_io.cpp): socket, close, send,
#    recv, poll and read become zklock_cio_*.
# 3. Every symbol it defines becomes local, except its public API (the names that the headers
#    zookeeper.h includes declare), and those are renamed zklock_zc_<name>. The header maps each
#    API name to its sealed name for zklock's own sources (src/bridge/zk_client.h).
# Nothing of the client is then visible under a name of its own: a program may link the system's
# C client beside libzklock, in any order, and define its own create_hashtable.
cmake_policy(VERSION 3.25)
include("${CMAKE_CURRENT_LIST_DIR}/zk_api_names.cmake")
foreach(v ARCHIVE OBJECT HEADER INCLUDE_DIR AR LD NM OBJCOPY)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "seal_zookeeper.cmake: ${v} is not set")
  endif()
endforeach()

get_filename_component(work "${OBJECT}" DIRECTORY)
set(work "${work}/seal-work")
file(REMOVE_RECURSE "${work}")
file(MAKE_DIRECTORY "${work}/members")

function(run)
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY "${work}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    list(JOIN ARGN " " cmd)
    message(FATAL_ERROR "seal_zookeeper.cmake: `${cmd}` failed (${rc}): ${err}")
  endif()
  set(run_output "${out}" PARENT_SCOPE)
endfunction()

# 1. One object.
run("${AR}" t "${ARCHIVE}")
string(REPLACE "\n" ";" members "${run_output}")
list(FILTER members EXCLUDE REGEX "^$")
list(LENGTH members n_members)
list(REMOVE_DUPLICATES members)
list(LENGTH members n_unique)
if(NOT n_members EQUAL n_unique)
  message(FATAL_ERROR "seal_zookeeper.cmake: ${ARCHIVE} holds two members of one name; ar x would lose one")
endif()
execute_process(COMMAND "${AR}" x "${ARCHIVE}" WORKING_DIRECTORY "${work}/members" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "seal_zookeeper.cmake: cannot unpack ${ARCHIVE}")
endif()
set(objects "")
foreach(m IN LISTS members)
  list(APPEND objects "members/${m}")
endforeach()
run("${LD}" -r -o linked.o ${objects})

# 2. The socket calls, to the seam.
set(renames "")
foreach(call socket close send recv poll read)
  list(APPEND renames --redefine-sym "${call}=zklock_cio_${call}")
endforeach()

# 3. The API: what it defines that the public headers declare (comments stripped first).
zklock_nm_names(defined "${NM}" DEFINED "${work}/linked.o")
zklock_zk_api_names(api "${INCLUDE_DIR}" ${defined})

set(keep "")
foreach(s IN LISTS api)
  string(APPEND keep "${s}\n")
  list(APPEND renames --redefine-sym "${s}=zklock_zc_${s}")
endforeach()
file(WRITE "${work}/keep.txt" "${keep}")
# Localize first (by the original names), then rename what stays global and the socket calls.
run("${OBJCOPY}" --keep-global-symbols=keep.txt linked.o localized.o)
run("${OBJCOPY}" ${renames} localized.o sealed.o)

file(COPY_FILE "${work}/sealed.o" "${OBJECT}")
zklock_zk_names_header("${HEADER}" "${ARCHIVE}" ${api})
file(REMOVE_RECURSE "${work}")
