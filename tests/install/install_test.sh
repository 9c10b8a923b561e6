#!/usr/bin/env bash
# The install tests (tests/install/CMakeLists.txt runs each step as its own ctest entry):
#   install  cmake --install the build tree to PREFIX; the programs' RUNPATH is $ORIGIN-relative
#   headers  only public headers are installed; each compiles on its own from PREFIX, and
#            taskwire.hpp also without MPI's include path (the MPI launch API is mpi.hpp)
#   cluster  the installed taskwire-scheduler and taskwire-worker (--preload of a plugin made
#            with taskwire_add_plugin) run tasks for an outside client built with CMake and one
#            built with pkg-config; an outside program built with CMake that includes mpi.hpp
#            runs its own cluster under MPIEXEC -n 2
#   deb      cpack -G DEB; the .deb's contents and Depends; its taskwire-scheduler --help runs
#            from a dpkg -x scratch root
# Nothing here sets LD_LIBRARY_PATH: installed programs must find libtaskwire on their own.
# Environment: BUILD_DIR, SOURCE_DIR, WORK_DIR (PREFIX is WORK_DIR/prefix), CXX, CXX_FLAGS,
# EXE_LINKER_FLAGS (the build's, so that a sanitizer build links its consumers alike), MPIEXEC
# (default mpiexec.mpich).
set -euo pipefail
unset LD_LIBRARY_PATH
step=${1:?usage: install_test.sh install|headers|cluster|deb}
: "${BUILD_DIR:?}" "${SOURCE_DIR:?}" "${WORK_DIR:?}" "${CXX:?}"
PREFIX=$WORK_DIR/prefix
PROGRAMS=(taskwire-scheduler taskwire-worker taskwire-mpi)
read -r -a cxx_flags <<<"${CXX_FLAGS:-}"
read -r -a linker_flags <<<"${EXE_LINKER_FLAGS:-}"

fail() { echo "install test ($step): $*" >&2; exit 1; }

# The library directory of PREFIX, as pkg-config reports it (lib, or lib/<triplet>).
pc_libdir() { dirname "$(find "$1" -name taskwire.pc -path '*/pkgconfig/*' | head -1)"; }

step_install() {
  rm -rf "$PREFIX"
  cmake --install "$BUILD_DIR" --prefix "$PREFIX" >/dev/null || fail "cmake --install $BUILD_DIR failed"
  for p in "${PROGRAMS[@]}"; do
    [ -x "$PREFIX/bin/$p" ] || fail "$p not installed in $PREFIX/bin"
    # shellcheck disable=SC2016  # a literal $ORIGIN
    readelf -d "$PREFIX/bin/$p" | grep -E 'R(UN)?PATH' | grep -qF '$ORIGIN/' ||
      fail "$p has no \$ORIGIN-relative RUNPATH: $(readelf -d "$PREFIX/bin/$p" | grep -E 'R(UN)?PATH')"
  done
  [ -n "$(pc_libdir "$PREFIX")" ] || fail "taskwire.pc not installed under $PREFIX"
  grep -qx "prefix=$PREFIX" "$(pc_libdir "$PREFIX")/taskwire.pc" ||
    fail "taskwire.pc does not name the install prefix $PREFIX"
  "$PREFIX/bin/taskwire-scheduler" --help >/dev/null || fail "installed taskwire-scheduler --help failed"
}

step_headers() {
  local inc=$PREFIX/include/taskwire
  [ -f "$inc/taskwire.hpp" ] || fail "umbrella header not installed under include/taskwire/"
  [ ! -e "$inc/worker/worker_server_impl.hpp" ] || fail "internal worker_server_impl.hpp is installed"
  local missing=0 header included
  while read -r header; do
    # shellcheck disable=SC2013  # header names have no spaces
    for included in $(sed -n 's|^ *# *include *<taskwire/\([^>]*\)>.*|\1|p' "$inc/$header"); do
      if [ ! -f "$inc/$included" ]; then
        echo "installed $header includes <taskwire/$included>, which is not installed:" \
          "add it to cmake/TaskwirePublicHeaders.cmake or stop including it" >&2
        missing=1
      fi
    done
  done < <(cd "$inc" && find . -name '*.hpp' -printf '%P\n' | sort)
  [ "$missing" = 0 ] || fail "installed headers include headers that are not installed"
  # Every header the README and the user guide tell users to include is there.
  local page
  for page in "$SOURCE_DIR/README.md" "$SOURCE_DIR"/docs/guide/*.md; do
    for included in $(grep -o '<taskwire/[^>]*>' "$page" | sed 's|<taskwire/\(.*\)>|\1|' | sort -u); do
      if [ ! -f "$inc/$included" ]; then
        echo "${page#"$SOURCE_DIR"/} names <taskwire/$included>, which is not installed:" \
          "add it to cmake/TaskwirePublicHeaders.cmake" >&2
        missing=1
      fi
    done
  done
  [ "$missing" = 0 ] || fail "headers the README or the guide names are not installed"

  export PKG_CONFIG_PATH; PKG_CONFIG_PATH=$(pc_libdir "$PREFIX")
  local cflags; cflags=$(pkg-config --cflags taskwire) || fail "pkg-config --cflags taskwire failed"
  # Each header alone (-fsyntax-only), against the install tree only: no -I into the sources.
  export CXX cflags; export CXX_FLAGS="${CXX_FLAGS:-}"
  # shellcheck disable=SC2016  # $1 and $CXX... are expanded by the sh that xargs starts
  (cd "$inc" && find . -name '*.hpp' -printf '%P\n' | sort) |
    xargs -P 2 -I{} sh -c 'echo "#include <taskwire/$1>" |
      $CXX -std=c++20 -Wall -Wextra -Werror $CXX_FLAGS $cflags -fsyntax-only -x c++ - ||
      { echo "installed header $1 does not compile on its own" >&2; exit 1; }' sh {} ||
    fail "an installed header does not compile on its own (above)"
  # The umbrella needs no MPI: its flags without mpich's (pkg-config's Requires brings them).
  local flag no_mpi=" $cflags "
  for flag in $(pkg-config --cflags mpich); do no_mpi=${no_mpi// "$flag" / }; done
  # shellcheck disable=SC2086  # no_mpi is a list of flags
  echo '#include <taskwire/taskwire.hpp>' |
    $CXX -std=c++20 -Wall -Wextra -Werror $CXX_FLAGS $no_mpi -fsyntax-only -x c++ - ||
    fail "installed taskwire.hpp does not compile without MPI's include path ($no_mpi)"
}

# Waits (up to 60 s) until FILE exists: the worker needs the scheduler's file.
wait_for_file() {
  local file=$1 pid=$2 i
  for ((i = 0; i < 600; i++)); do
    [ -s "$file" ] && return 0
    kill -0 "$pid" 2>/dev/null || fail "taskwire-scheduler exited before writing $file: $(cat "$WORK_DIR/scheduler.log")"
    sleep 0.1
  done
  fail "no scheduler file $file after 60 s"
}

step_cluster() {
  local build=$WORK_DIR/consumer-build
  rm -rf "$build" "$WORK_DIR/scheduler.json"
  cmake -S "$SOURCE_DIR/tests/install/consumer" -B "$build" -DCMAKE_PREFIX_PATH="$PREFIX" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$CXX" -DCMAKE_CXX_FLAGS="${CXX_FLAGS:-}" \
    -DCMAKE_EXE_LINKER_FLAGS="${EXE_LINKER_FLAGS:-}" -DCMAKE_SHARED_LINKER_FLAGS="${EXE_LINKER_FLAGS:-}" \
    >"$WORK_DIR/consumer-configure.log" 2>&1 ||
    { cat "$WORK_DIR/consumer-configure.log"; fail "find_package(taskwire) failed in an outside project"; }
  cmake --build "$build" -j 2 >"$WORK_DIR/consumer-build.log" 2>&1 ||
    { cat "$WORK_DIR/consumer-build.log"; fail "the outside project failed to build against the installed package"; }
  "$build/consumer" || fail "the outside inproc program failed"
  "${MPIEXEC:-mpiexec.mpich}" -n 2 "$build/consumer_mpi" ||
    fail "the outside program that includes <taskwire/mpi.hpp> failed under ${MPIEXEC:-mpiexec.mpich} -n 2"

  # The same client, built with pkg-config: it compiles the task functions in itself.
  export PKG_CONFIG_PATH; PKG_CONFIG_PATH=$(pc_libdir "$PREFIX")
  local src=$SOURCE_DIR/tests/install/consumer pc_flags
  pc_flags=$(pkg-config --cflags --libs taskwire) || fail "pkg-config --cflags --libs taskwire failed"
  # shellcheck disable=SC2086  # pc_flags is a list of flags
  "$CXX" -std=c++20 "${cxx_flags[@]}" "$src/consumer_client.cpp" "$src/consumer_tasks.cpp" \
    -o "$build/consumer_client_pc" $pc_flags "${linker_flags[@]}" \
    -Wl,-rpath,"$(pkg-config --variable=libdir taskwire)" ||
    fail "a client built with \$(pkg-config --cflags --libs taskwire) failed to compile or link"

  local file=$WORK_DIR/scheduler.json
  "$PREFIX/bin/taskwire-scheduler" --listen tcp://127.0.0.1:0 --scheduler-file "$file" \
    >"$WORK_DIR/scheduler.log" 2>&1 &
  scheduler_pid=$!
  trap 'kill "$scheduler_pid" ${worker_pid:+"$worker_pid"} 2>/dev/null || true' EXIT
  wait_for_file "$file" "$scheduler_pid"
  "$PREFIX/bin/taskwire-worker" --scheduler-file "$file" --nthreads 1 --name consumer-w1 \
    --preload "$build/libconsumer_tasks.so" >"$WORK_DIR/worker.log" 2>&1 &
  worker_pid=$!

  local rc=0
  "$build/consumer_client" "$file" || rc=$?
  [ "$rc" = 0 ] || { cat "$WORK_DIR/scheduler.log" "$WORK_DIR/worker.log"; fail "CMake-built client failed ($rc)"; }
  "$build/consumer_client_pc" "$file" --shutdown || rc=$?
  [ "$rc" = 0 ] || { cat "$WORK_DIR/scheduler.log" "$WORK_DIR/worker.log"; fail "pkg-config-built client failed ($rc)"; }
  wait "$scheduler_pid" || rc=$?
  [ "$rc" = 0 ] || { cat "$WORK_DIR/scheduler.log"; fail "taskwire-scheduler exited $rc after client.shutdown()"; }
  wait "$worker_pid" || rc=$?
  [ "$rc" = 0 ] || { cat "$WORK_DIR/worker.log"; fail "taskwire-worker exited $rc after client.shutdown()"; }
  trap - EXIT
}

step_deb() {
  local out=$WORK_DIR/deb root=$WORK_DIR/deb-root
  rm -rf "$out" "$root"
  (cd "$BUILD_DIR" && cpack -G DEB -B "$out" >"$WORK_DIR/cpack.log" 2>&1) ||
    { cat "$WORK_DIR/cpack.log"; fail "cpack -G DEB failed"; }
  local deb; deb=$(find "$out" -maxdepth 1 -name 'taskwire_*.deb' | head -1)
  [ -n "$deb" ] || fail "cpack made no taskwire_*.deb in $out"
  [ "$(dpkg-deb -f "$deb" Package)" = taskwire ] || fail "package name is not taskwire"
  local depends; depends=$(dpkg-deb -f "$deb" Depends)
  for dep in libboost-serialization libfmt libspdlog libmpich; do
    grep -q "$dep" <<<"$depends" || fail "Depends lacks $dep: '$depends'"
  done
  local contents; contents=$(dpkg-deb --contents "$deb")
  for path in ./usr/bin/taskwire-scheduler ./usr/bin/taskwire-worker ./usr/bin/taskwire-mpi \
    ./usr/include/taskwire/taskwire.hpp /taskwire.pc /taskwireConfig.cmake /libtaskwire.so.0; do
    grep -qF "$path" <<<"$contents" || fail "the .deb lacks $path"
  done
  if grep -qF worker_server_impl.hpp <<<"$contents"; then fail "the .deb ships worker_server_impl.hpp"; fi
  dpkg -x "$deb" "$root" || fail "dpkg -x $deb failed"
  grep -qx 'prefix=/usr' "$root/usr/lib/pkgconfig/taskwire.pc" ||
    fail "the .deb's taskwire.pc does not say prefix=/usr: $(grep prefix= "$root/usr/lib/pkgconfig/taskwire.pc")"
  "$root/usr/bin/taskwire-scheduler" --help >"$WORK_DIR/deb-help.log" 2>&1 ||
    { cat "$WORK_DIR/deb-help.log"; fail "taskwire-scheduler from the .deb (dpkg -x) does not run"; }
  grep -q 'usage: taskwire-scheduler' "$WORK_DIR/deb-help.log" || fail "unexpected --help output"
  echo "install test (deb): $(basename "$deb"), Depends: $depends"
}

mkdir -p "$WORK_DIR"
case $step in
  install) step_install ;;
  headers) step_headers ;;
  cluster) step_cluster ;;
  deb) step_deb ;;
  *) fail "unknown step '$step'" ;;
esac
