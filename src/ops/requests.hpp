// Requests made of several port requests, shared by the operations: a lock path's listing (shared
// by every acquire of the session that asks for it at once), a lock path's directories, and the
// chroot check.
#pragma once

#include "port/zk_port.hpp"

#include <zklock/detail/listing.hpp>

#include <memory>
#include <string>

namespace zklock::detail {

using listing_cb = unique_function<void(error_code, std::shared_ptr<const listing>)>;

/// Lists `dir` as a queue (see listing.hpp). Coalesced: with no listing of `dir` in flight it is
/// sent at once; else from a handler posted by the first caller, and every list_queue of `dir`
/// called before it is sent shares it. ZooKeeper runs one session's requests in order, so the
/// listing contains every node this session created before any of them called: an acquire calls
/// it right after its create, and a burst of acquires on one path costs one listing, not one
/// each. The listing is never null (empty on an error).
void list_queue(const session_ptr& s, const std::string& dir, listing_cb cb);

/// Creates `dir` and whichever of its parents are missing as container nodes (the server removes
/// them again once they have had children and are empty); existing ones are fine. `dir` first: a
/// lock under an existing parent costs one request.
void create_containers(const session_ptr& s, const std::string& dir, void_cb cb);

/// A path was not there: was it the chroot? Under a chroot "/" is the chroot's node (without one
/// it always exists), so one exists("/") tells. `cb` gets errc::chroot_missing if so, nothing if
/// the chroot exists, or the request's error.
void check_chroot(zk_port& s, void_cb cb);

}  // namespace zklock::detail
