#pragma once
// The outside project's task functions: registered in consumer_tasks.cpp, which the plugin
// (libconsumer_tasks.so, preloaded by the worker) and every client link.
namespace consumer {
long square(long x);
long add(long a, long b);
}  // namespace consumer
