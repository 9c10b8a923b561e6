# The headers `cmake --install` and the .deb ship: the public API's entry points and every
# taskwire header they include, directly or not (tests/install checks that each compiles on
# its own from the install tree and that none includes a header missing from this list).
# Everything else (backends' internals, worker_server_impl.hpp, the nanny, the MPI poller...)
# stays in the source tree. A header a public one starts to include goes in the second list.

# Entry points: what a program, a plugin or an embedding of the servers includes.
set(TASKWIRE_PUBLIC_ENTRY_HEADERS
  taskwire.hpp                      # umbrella, without the MPI launch API (mpi.hpp)
  mpi.hpp                           # the MPI launch API: initialize, run_cluster, MpiEnvironment
  client/client.hpp client/future.hpp
  client/progress.hpp client/scheduler_info.hpp
  launch/mpi/launch.hpp             # initialize / initialize_pool / run_cluster (no <mpi.h>)
  launch/slurm/slurm_cluster.hpp    # SlurmCluster: workers as Slurm jobs
  graph/graph.hpp graph/execute.hpp
  runtime/function_registry.hpp runtime/serialize.hpp runtime/serialize_std.hpp
  runtime/large_buffer.hpp          # BufferAllocator for tasks' big arrays
  runtime/context.hpp runtime/log.hpp
  comm/mpi/mpi_environment.hpp runtime/force_exit.hpp
  comm/mpi/mpi_broadcast.hpp        # polled broadcast over the runtime communicator
  comm/backends.hpp comm/core/connect.hpp
  scheduler/scheduler_server.hpp worker/worker_server.hpp)

# Included by the entry points: installed because they must be, not API of their own.
set(TASKWIRE_PUBLIC_INCLUDED_HEADERS
  comm/core/address.hpp comm/core/backend.hpp comm/core/backend_counters.hpp comm/core/comm.hpp comm/core/error.hpp
  comm/core/handshake.hpp comm/core/registry.hpp
  graph/options.hpp graph/plan.hpp graph/run.hpp
  runtime/asio.hpp runtime/batch.hpp runtime/config.hpp
  runtime/frame.hpp runtime/histogram.hpp runtime/resources.hpp comm/mpi/mpi_wake.hpp comm/mpi/mpi_hosts.hpp comm/mpi/mpi_exits.hpp runtime/protocol.hpp runtime/raw_codec.hpp
  runtime/value.hpp                                 # function_registry.hpp
  runtime/wire_codec.hpp
  scheduler/dashboard_options.hpp scheduler/events.hpp scheduler/instructions.hpp scheduler/ptr_set.hpp  # scheduler_server.hpp
  scheduler/records.hpp scheduler/scheduler_server_inspect.hpp scheduler/scheduler_state.hpp
  scheduler/task_spec.hpp scheduler/task_status.hpp
  launch/adaptive.hpp launch/batch_system.hpp launch/job_cluster.hpp  # slurm_cluster.hpp
  launch/slurm/slurm_batch.hpp
  worker/data_store.hpp worker/memory_limits.hpp)   # worker_server.hpp, launch.hpp

set(TASKWIRE_PUBLIC_HEADERS ${TASKWIRE_PUBLIC_ENTRY_HEADERS} ${TASKWIRE_PUBLIC_INCLUDED_HEADERS})
