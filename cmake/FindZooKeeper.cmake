# FindZooKeeper — the ZooKeeper C client, single-threaded flavour (Debian: libzookeeper-st-dev).
# Debian ships no CMake config or pkg-config file for it.
#
# Defines ZooKeeper_FOUND, ZooKeeper_INCLUDE_DIR, ZooKeeper_LIBRARY, ZooKeeper_VERSION and the
# imported target ZooKeeper::zookeeper_st.

find_path(ZooKeeper_INCLUDE_DIR NAMES zookeeper/zookeeper.h)
find_library(ZooKeeper_LIBRARY NAMES zookeeper_st)

if(ZooKeeper_INCLUDE_DIR AND EXISTS "${ZooKeeper_INCLUDE_DIR}/zookeeper/zookeeper_version.h")
  file(STRINGS "${ZooKeeper_INCLUDE_DIR}/zookeeper/zookeeper_version.h" _zk_version_line
       REGEX "^#define ZOO_VERSION \"[0-9.]+\"")
  string(REGEX REPLACE ".*\"([0-9.]+)\".*" "\\1" ZooKeeper_VERSION "${_zk_version_line}")
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(ZooKeeper
  REQUIRED_VARS ZooKeeper_LIBRARY ZooKeeper_INCLUDE_DIR
  VERSION_VAR ZooKeeper_VERSION)

if(ZooKeeper_FOUND AND NOT TARGET ZooKeeper::zookeeper_st)
  add_library(ZooKeeper::zookeeper_st UNKNOWN IMPORTED)
  set_target_properties(ZooKeeper::zookeeper_st PROPERTIES
    IMPORTED_LOCATION "${ZooKeeper_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${ZooKeeper_INCLUDE_DIR}")
endif()
mark_as_advanced(ZooKeeper_INCLUDE_DIR ZooKeeper_LIBRARY)
