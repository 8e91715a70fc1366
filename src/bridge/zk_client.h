// The ZooKeeper C client's API as zklock calls it: under the names it has inside libzklock, where
// it is sealed (cmake/seal_zookeeper.cmake). Every zklock source that uses the client includes
// this, never <zookeeper/zookeeper.h> itself: a call to a name the sealed client does not export
// fails to link, rather than binding to another copy of the client in the program.
#pragma once

#include <zk_sealed_names.h>  // generated: #define zoo_acreate zklock_zc_zoo_acreate, ...

#include <zookeeper/zookeeper.h>
