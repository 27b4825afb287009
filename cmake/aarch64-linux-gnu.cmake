# CMake toolchain file: cross-builds vkformer for aarch64 Linux on a Debian x86-64 machine
# (`./setup.sh arm64` installs what it needs and uses it; README, "ARM64 and mobile").
#   cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
# Compilers: Debian's crossbuild-essential-arm64 (aarch64-linux-gnu-gcc / g++). Libraries: the
# arm64 -dev packages of Debian's multiarch (dpkg --add-architecture arm64), found in
# /usr/lib/aarch64-linux-gnu; pkg-config reads only their .pc files. VKF_ARM64_EXTRA_ROOT: a
# directory with packages unpacked rather than installed (spirv-tools and glslang-dev are not
# Multi-Arch: same in Debian 12, so their arm64 builds cannot sit beside the amd64 ones that the
# x86 build uses; `./setup.sh arm64` unpacks them there with dpkg-deb -x). Tests and programs run
# under qemu-aarch64 (CMAKE_CROSSCOMPILING_EMULATOR) on the multiarch root: qemu's default prefix
# is /, where libc6:arm64 puts /lib/ld-linux-aarch64.so.1 and the arm64 packages their libraries
# (lavapipe's libvulkan_lvp.so and its LLVM among them), so no -L is needed.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(VKF_CROSS_TRIPLE aarch64-linux-gnu)

set(CMAKE_C_COMPILER ${VKF_CROSS_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${VKF_CROSS_TRIPLE}-g++)
set(CMAKE_LIBRARY_ARCHITECTURE ${VKF_CROSS_TRIPLE})

set(VKF_ARM64_EXTRA_ROOT "" CACHE PATH "packages unpacked for aarch64 (spirv-tools, glslang-dev)")
# the host's programs (glslangValidator checks the shaders at build time), the target's libraries,
# headers and CMake packages; / is the multiarch root: its aarch64 directories hold the target's
set(CMAKE_FIND_ROOT_PATH / ${VKF_ARM64_EXTRA_ROOT})
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES VKF_ARM64_EXTRA_ROOT)
if(VKF_ARM64_EXTRA_ROOT)
  # glslang's CMake package names SPIRV-Tools' libraries bare (-lSPIRV-Tools): the linker looks
  # in the unpacked root too
  foreach(kind EXE SHARED MODULE)
    set(CMAKE_${kind}_LINKER_FLAGS_INIT "-L${VKF_ARM64_EXTRA_ROOT}/usr/lib/${VKF_CROSS_TRIPLE}")
  endforeach()
endif()
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# the amd64 packages' CMake configurations are in /usr/lib/x86_64-linux-gnu/cmake: never read
set(CMAKE_IGNORE_PATH /usr/lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu/cmake)

# pkg-config: the arm64 .pc files only (libcurl, libarchive, libcrypto, libmicrohttpd, libedit)
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/${VKF_CROSS_TRIPLE}/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")

find_program(VKF_QEMU_AARCH64 NAMES qemu-aarch64-static qemu-aarch64)
if(VKF_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${VKF_QEMU_AARCH64})
endif()
