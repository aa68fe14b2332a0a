#include "api/engine/replica_context.h"

namespace tower {

namespace {
thread_local ReplicaContext* current = nullptr;
}  // namespace

ReplicaContext* current_replica_context() { return current; }

ReplicaContextScope::ReplicaContextScope(ReplicaContext* context) : previous_(current) { current = context; }

ReplicaContextScope::~ReplicaContextScope() { current = previous_; }

}  // namespace tower
