# The ZooKeeper C client compiled from Apache's source release into libzklock
# (ZKLOCK_ZK_CLIENT=source, ZKLOCK_ZK_SOURCE=<the release: its tarball or unpacked directory>),
# for systems without Debian's libzookeeper_st.a. The compiler seals it as cmake/seal_zookeeper.cmake
# seals that archive:
#   * each source file is compiled with cmake/zk_source_prelude.h first: its socket calls go to
#     zklock's seam (zklock_cio_*), and every name it defines is renamed zklock_zc_<name> (the
#     generated zk_client_names.h);
#   * with -fvisibility=hidden, so a shared libzklock exports none of them (cmake/zklock.map
#     hides the seam's and the renamed ones too);
#   * zklock's own sources see the client's API under the sealed names (zk_sealed_names.h, as
#     for the archive).
# The names come from a probe: configure compiles the sources once with the same compiler and
# flags, the routing but not the renaming, and reads their objects (nm). The probe's objects also
# go through the archive's checks (cmake/ZooKeeperSeal.cmake): the version range, and socket calls
# the seam handles, fortified variants refused.
# The release's generated jute files (zookeeper.jute.{c,h}) are made by the jute compiler (Java and
# the zookeeper-jute jar) when the release does not carry them, at configure time (the probe needs
# them).

include(CheckIncludeFile)
include(CheckFunctionExists)
include(CheckSymbolExists)
include(CheckStructHasMember)
include(${CMAKE_CURRENT_LIST_DIR}/zk_api_names.cmake)

set(ZKLOCK_ZK_JUTE_JAR "" CACHE FILEPATH
  "The jute compiler (zookeeper-jute-<version>.jar: Debian's libzookeeper-java, or Maven Central's org.apache.zookeeper:zookeeper-jute) for a source release without generated jute files")

# zklock_zookeeper_from_source(SOURCE WORK): compiles the client of the release SOURCE (a tarball or
# a directory) in WORK; defines the object library zklock_zk_client (the sealed client) and the
# static library zklock_zk_plain (the same sources unsealed, for the tests and the bench, never
# installed), and sets in the caller: ZooKeeper_VERSION, ZooKeeper_INCLUDE_DIR (the client's
# public headers as <zookeeper/...>), ZKLOCK_ZK_SEALED_DIR (zk_sealed_names.h).
function(zklock_zookeeper_from_source source work)
  # The release: a tarball is unpacked once per content (its SHA-256 names the directory).
  if(IS_DIRECTORY "${source}")
    set(root "${source}")
  elseif(source MATCHES "^(.*)\\.(asc|sig|sign|sha1|sha256|sha512|md5)$")
    message(FATAL_ERROR "zklock: ZKLOCK_ZK_SOURCE=${source} is a detached signature or checksum, "
      "not the source release: give ${CMAKE_MATCH_1}")
  elseif(EXISTS "${source}")
    file(SHA256 "${source}" sum)
    string(SUBSTRING "${sum}" 0 16 sum)
    set(unpacked "${work}/release-${sum}")
    if(NOT EXISTS "${unpacked}/.unpacked")
      file(REMOVE_RECURSE "${unpacked}")
      message(STATUS "zklock: unpacking ${source}")
      file(ARCHIVE_EXTRACT INPUT "${source}" DESTINATION "${unpacked}")
      file(TOUCH "${unpacked}/.unpacked")
    endif()
    file(GLOB entries LIST_DIRECTORIES true "${unpacked}/*")
    list(FILTER entries EXCLUDE REGEX "/\\.unpacked$")
    list(LENGTH entries n)
    if(n EQUAL 1 AND IS_DIRECTORY "${entries}")
      set(root "${entries}")
    else()
      set(root "${unpacked}")
    endif()
  else()
    message(FATAL_ERROR "zklock: ZKLOCK_ZK_SOURCE=${source} does not exist (give Apache ZooKeeper's "
      "source release, apache-zookeeper-<version>.tar.gz or Debian's zookeeper_<version>.orig.tar.gz, "
      "or its unpacked directory)")
  endif()
  set(client "${root}/zookeeper-client/zookeeper-client-c")
  if(NOT EXISTS "${client}/src/zookeeper.c" OR NOT EXISTS "${client}/include/zookeeper.h")
    message(FATAL_ERROR "zklock: ZKLOCK_ZK_SOURCE=${source} is not an Apache ZooKeeper source release: "
      "${client}/src/zookeeper.c or include/zookeeper.h is missing")
  endif()
  file(STRINGS "${client}/include/zookeeper_version.h" line REGEX "^#define ZOO_VERSION \"[0-9.]+\"")
  string(REGEX REPLACE ".*\"([0-9.]+)\".*" "\\1" version "${line}")
  zklock_check_zookeeper_version("${version}" "${source}")

  # The public headers as zklock includes them (<zookeeper/zookeeper.h>), with the jute header.
  set(inc "${work}/include")
  set(gen "${work}/generated")
  file(MAKE_DIRECTORY "${inc}/zookeeper" "${gen}")
  if(EXISTS "${client}/generated/zookeeper.jute.h" AND EXISTS "${client}/generated/zookeeper.jute.c")
    set(jute_h "${client}/generated/zookeeper.jute.h")
    set(jute_c "${client}/generated/zookeeper.jute.c")
  else()
    set(jute "${root}/zookeeper-jute/src/main/resources/zookeeper.jute")
    if(NOT EXISTS "${jute}")
      message(FATAL_ERROR "zklock: ${source} carries neither the generated jute files "
        "(zookeeper-client/zookeeper-client-c/generated/zookeeper.jute.{c,h}) nor ${jute} to make them from")
    endif()
    set(jute_h "${gen}/zookeeper.jute.h")
    set(jute_c "${gen}/zookeeper.jute.c")
    file(SHA256 "${jute}" jute_sum)
    if(NOT EXISTS "${jute_c}" OR NOT EXISTS "${gen}/.jute-${jute_sum}")
      find_package(Java COMPONENTS Runtime QUIET)
      if(NOT Java_JAVA_EXECUTABLE)
        message(FATAL_ERROR "zklock: the source release ${source} has no generated jute files, and "
          "making them needs Java (a JRE: `java` on PATH, or JAVA_HOME), which was not found")
      endif()
      if(NOT ZKLOCK_ZK_JUTE_JAR)
        find_file(jar NAMES zookeeper-jute.jar zookeeper-jute-${version}.jar
          PATHS /usr/share/java /usr/share/zookeeper/lib NO_CACHE)
        if(NOT jar)
          message(FATAL_ERROR "zklock: the source release ${source} has no generated jute files, and "
            "making them needs the jute compiler: set ZKLOCK_ZK_JUTE_JAR to zookeeper-jute-<version>.jar "
            "(Debian: libzookeeper-java's /usr/share/java/zookeeper-jute.jar; elsewhere Maven Central's "
            "org.apache.zookeeper:zookeeper-jute)")
        endif()
        set(ZKLOCK_ZK_JUTE_JAR "${jar}")
      endif()
      file(GLOB old "${gen}/.jute-*")
      if(old)
        file(REMOVE ${old})
      endif()
      execute_process(COMMAND "${Java_JAVA_EXECUTABLE}" -cp "${ZKLOCK_ZK_JUTE_JAR}"
                              org.apache.jute.compiler.generated.Rcc -l c "${jute}"
                      WORKING_DIRECTORY "${gen}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
      if(NOT rc EQUAL 0 OR NOT EXISTS "${jute_c}" OR NOT EXISTS "${jute_h}")
        message(FATAL_ERROR "zklock: the jute compiler (${ZKLOCK_ZK_JUTE_JAR}) could not make the C "
          "files of ${jute}: ${out} ${err}")
      endif()
      file(TOUCH "${gen}/.jute-${jute_sum}")
      message(STATUS "zklock: generated zookeeper.jute.{c,h} with ${ZKLOCK_ZK_JUTE_JAR}")
    endif()
  endif()
  foreach(h zookeeper.h proto.h zookeeper_version.h recordio.h zookeeper_log.h)
    configure_file("${client}/include/${h}" "${inc}/zookeeper/${h}" COPYONLY)
  endforeach()
  configure_file("${jute_h}" "${inc}/zookeeper/zookeeper.jute.h" COPYONLY)

  # config.h as the release's own CMake build makes it (its cmake_config.h.in), for this system.
  foreach(h arpa/inet.h dlfcn.h fcntl.h inttypes.h memory.h netdb.h netinet/in.h stdint.h stdlib.h
            string.h strings.h sys/socket.h sys/stat.h sys/time.h sys/types.h unistd.h sys/utsname.h)
    string(TOUPPER "HAVE_${h}" var)
    string(REGEX REPLACE "/|\\." "_" var "${var}")
    check_include_file(${h} ${var})
  endforeach()
  foreach(f getcwd gethostbyname gethostname getlogin getpwuid_r gettimeofday getuid memmove memset
            poll socket strchr strdup strerror strtol)
    string(TOUPPER "HAVE_${f}" var)
    check_function_exists(${f} ${var})
  endforeach()
  check_struct_has_member("struct sockaddr_in6" sin6_addr "netinet/in.h" ZOO_IPV6_ENABLED)
  set(HAVE_GENERATED_ZOOKEEPER_JUTE_C 1)
  set(HAVE_GENERATED_ZOOKEEPER_JUTE_H 1)
  configure_file("${client}/cmake_config.h.in" "${gen}/config.h")

  set(sources src/zookeeper.c src/recordio.c src/zk_log.c src/zk_hashtable.c src/addrvec.c
              src/st_adaptor.c src/hashtable/hashtable.c src/hashtable/hashtable_itr.c)
  list(TRANSFORM sources PREPEND "${client}/")
  list(APPEND sources "${jute_c}")
  set(includes "${gen}" "${inc}/zookeeper" "${client}/include" "${client}/src")
  set(prelude "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/zk_source_prelude.h")

  # The probe: the sources compiled as the build compiles them (compiler, flags of the build type,
  # sanitizers), with the seam's routing and without the renaming.
  set(probe "${work}/probe")
  file(REMOVE_RECURSE "${probe}")
  file(MAKE_DIRECTORY "${probe}")
  string(TOUPPER "${CMAKE_BUILD_TYPE}" config)
  separate_arguments(flags UNIX_COMMAND "${CMAKE_C_FLAGS} ${CMAKE_C_FLAGS_${config}}")
  get_directory_property(dir_options COMPILE_OPTIONS)
  set(include_flags "")
  foreach(i IN LISTS includes)
    list(APPEND include_flags "-I${i}")
  endforeach()
  set(objects "")
  foreach(s IN LISTS sources)
    get_filename_component(name "${s}" NAME_WLE)
    set(o "${probe}/${name}.o")
    execute_process(COMMAND "${CMAKE_C_COMPILER}" ${flags} ${dir_options} -fPIC -w -include "${prelude}"
                            ${include_flags} -c "${s}" -o "${o}"
                    RESULT_VARIABLE rc ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "zklock: compiling ${s} of the ZooKeeper C client ${version} failed: ${err}")
    endif()
    list(APPEND objects "${o}")
  endforeach()
  zklock_nm_names(undefined "${CMAKE_NM}" UNDEFINED ${objects})
  zklock_check_socket_calls("${source}" "${version}" "zklock_cio_" ${undefined})
  zklock_nm_names(defined "${CMAKE_NM}" DEFINED ${objects})
  zklock_zk_api_names(api "${inc}" ${defined})
  set(sealed_dir "${work}/sealed")
  file(MAKE_DIRECTORY "${sealed_dir}")
  zklock_zk_names_header("${sealed_dir}/zk_sealed_names.h" "${source}" ${api})
  zklock_zk_names_header("${work}/zk_client_names.h" "${source}" ${defined})
  list(LENGTH defined n_defined)
  list(LENGTH api n_api)
  message(STATUS "zklock: ZooKeeper C client ${version} from ${root}: ${n_defined} names sealed, ${n_api} of them its API")

  # The sealed client, compiled into libzklock.
  add_library(zklock_zk_client OBJECT ${sources})
  target_include_directories(zklock_zk_client PRIVATE ${includes})
  target_compile_options(zklock_zk_client PRIVATE -w -fvisibility=hidden -include "${prelude}")
  target_compile_definitions(zklock_zk_client PRIVATE ZKLOCK_ZK_CLIENT_NAMES="${work}/zk_client_names.h")
  set_target_properties(zklock_zk_client PROPERTIES POSITION_INDEPENDENT_CODE ON)
  set_source_files_properties(${sources} TARGET_DIRECTORY zklock_zk_client PROPERTIES
    OBJECT_DEPENDS "${prelude};${work}/zk_client_names.h")

  # The same client unsealed, for the programs that use a plain C client beside libzklock (the
  # bench's raw floor, the seam's test) where the system has none.
  add_library(zklock_zk_plain STATIC EXCLUDE_FROM_ALL ${sources})
  target_include_directories(zklock_zk_plain PRIVATE "${gen}" "${client}/src"
                                             PUBLIC "$<BUILD_INTERFACE:${inc}>" "$<BUILD_INTERFACE:${inc}/zookeeper>")
  target_compile_options(zklock_zk_plain PRIVATE -w)
  # Under UBSan (ZKLOCK_SANITIZE): the client serializes an empty buffer with memcpy(dst, NULL, 0)
  # (recordio.c, oa_serialize_buffer), which copies nothing but breaks memcpy's nonnull contract;
  # that one check is left out of the client's own code, every other one stays.
  if(ZKLOCK_SANITIZE MATCHES "undefined")
    target_compile_options(zklock_zk_client PRIVATE -fno-sanitize=nonnull-attribute)
    target_compile_options(zklock_zk_plain PRIVATE -fno-sanitize=nonnull-attribute)
  endif()

  set(ZooKeeper_VERSION "${version}" PARENT_SCOPE)
  set(ZooKeeper_INCLUDE_DIR "${inc}" PARENT_SCOPE)
  set(ZKLOCK_ZK_SEALED_DIR "${sealed_dir}" PARENT_SCOPE)
endfunction()
