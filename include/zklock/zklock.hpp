// zklock — fair, cancellable distributed locks on Apache ZooKeeper for Boost.Asio.
#pragma once

#include <zklock/config.hpp>
#include <zklock/election.hpp>
#include <zklock/error.hpp>
#include <zklock/basic_lock.hpp>
#include <zklock/lease.hpp>
#include <zklock/metrics.hpp>
#include <zklock/multi_lock.hpp>
#include <zklock/mutex.hpp>
#include <zklock/queue.hpp>
#include <zklock/semaphore.hpp>
#include <zklock/session.hpp>
#include <zklock/shared_mutex.hpp>
#include <zklock/types.hpp>
