// The Apache Curator worker (test/interop/CuratorWorker.java, usage in its header): compiled once
// per test process with Debian's JDK against Debian's libcurator-*-java, run with java. Shared by
// the interop tests and the `zklock` command-line tests.
#pragma once

#include "support/process_util.hpp"

#include <chrono>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

namespace zklock::test {

/// Compiles `java_source` with javac against Debian's Curator 5.4 and its dependencies into the
/// directory `out`; the classpath to run it with (`out`, then those jars). Throws
/// std::runtime_error with javac's output if it fails.
inline std::string compile_against_curator(const std::filesystem::path& java_source, const std::filesystem::path& out)
{
    namespace fs = std::filesystem;
    std::string jars;
    for (const char* want : {"curator-client.jar", "curator-framework.jar", "curator-recipes.jar", "guava.jar",
                             "slf4j-api.jar", "slf4j-nop.jar", "zookeeper.jar", "zookeeper-jute.jar"})
        if (fs::exists(fs::path("/usr/share/java") / want)) jars += ":/usr/share/java/" + std::string(want);
    const auto r = detail::run_process({"javac", "-nowarn", "-cp", jars.substr(jars.empty() ? 0 : 1), "-d", out.string(),
                                        java_source.string()},
                                       std::chrono::minutes(10));
    if (r.status != 0)
        throw std::runtime_error("cannot compile " + java_source.filename().string() +
                                 " (javac and libcurator-recipes-java are installed by scripts/install-deps.sh): "
                                 "javac exited with " + std::to_string(r.status) + ":\n" + r.out + r.err);
    return out.string() + jars;
}

/// Compiles `worker_java` (CuratorWorker.java) into a temporary directory, once per process; the
/// classpath to run it with.
inline const std::string& curator_worker_classpath(const std::filesystem::path& worker_java)
{
    static const std::string cp = [&] {
        const auto out = std::filesystem::temp_directory_path() / ("zklock-curator-" + std::to_string(::getpid()));
        std::filesystem::create_directories(out);
        return compile_against_curator(worker_java, out);
    }();
    return cp;
}

/// The command line of one Curator worker: `java ... CuratorWorker SERVERS PATH MODE ROUNDS HOLD_MS LOG`.
inline std::vector<std::string> curator_worker_argv(const std::filesystem::path& worker_java, const std::string& servers,
                                                    const std::string& path, const std::string& mode, int rounds,
                                                    int hold_ms, const std::filesystem::path& log)
{
    return {"java", "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", curator_worker_classpath(worker_java),
            "CuratorWorker", servers, path, mode, std::to_string(rounds), std::to_string(hold_ms), log.string()};
}

}  // namespace zklock::test
