# Debian packages: `cpack -G DEB` in the build tree writes three (README, "Packages"), one per
# install component of CMakeLists.txt:
#   vkformer        (component cli) the CLI, its manual page and bash completion; the CLI links
#                   the static library, so it needs no libvkformer0
#   libvkformer0    (component lib) libvkformer.so.0, the shared library (Debian names a shared
#                   library's package after its soname)
#   libvkformer-dev (component dev) vkformer.h, libvkformer.a, the libvkformer.so link,
#                   vkformer.pc and the CMake package; it depends on libvkformer0 of the same
#                   version, and on the -dev packages that vkformer.pc and vkformerConfig.cmake
#                   name (a static link needs their archives)
# The packages' shared-library dependencies are dpkg-shlibdeps' (Debian dpkg-dev); the Vulkan
# loader is loaded at run time (volk), which dpkg-shlibdeps cannot see: it is recommended, with
# Mesa's drivers (lavapipe), since without them the programs run on the CPU backend.
# tests/package_deb.sh installs, runs and removes them.
set(CPACK_PACKAGE_NAME vkformer)
set(CPACK_PACKAGE_VENDOR "vkformer")
# the Maintainer field: the project has no address of its own to name; a packager sets theirs
set(CPACK_PACKAGE_CONTACT "vkformer maintainers" CACHE STRING "Maintainer of the Debian packages (cpack -G DEB)")
# each package's Description is its CPACK_DEBIAN_<COMPONENT>_DESCRIPTION (first line: the summary)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_COMPONENTS_ALL cli lib dev)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# the Architecture field: CPack asks dpkg (this machine's, amd64); a cross build (the toolchain
# file cmake/aarch64-linux-gnu.cmake) is for the Debian architecture of its target triple (arm64)
if(CMAKE_CROSSCOMPILING AND CMAKE_LIBRARY_ARCHITECTURE)
  execute_process(COMMAND dpkg-architecture -t ${CMAKE_LIBRARY_ARCHITECTURE} -qDEB_HOST_ARCH
    OUTPUT_VARIABLE vkf_deb_arch OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE vkf_deb_rc)
  if(vkf_deb_rc EQUAL 0 AND vkf_deb_arch)
    set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE ${vkf_deb_arch})
  endif()
endif()
set(CPACK_DEBIAN_PACKAGE_SECTION science)
# stripped, as Debian ships programs and libraries (the build tree keeps the debug information)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)

set(CPACK_DEBIAN_CLI_PACKAGE_NAME vkformer)
set(CPACK_DEBIAN_CLI_PACKAGE_SECTION science)
set(CPACK_DEBIAN_CLI_PACKAGE_RECOMMENDS "libvulkan1, mesa-vulkan-drivers")
set(CPACK_DEBIAN_CLI_DESCRIPTION "transformer inference on any Vulkan GPU: the vkformer command
vkformer runs transformer models (safetensors directories and GGUF files) on a Vulkan
device, or on its CPU reference backend: generate, chat, an OpenAI-compatible server
(serve), translate, embed, tokenize, quantize, bench, selftest and pull.")

set(CPACK_DEBIAN_LIB_PACKAGE_NAME libvkformer${PROJECT_VERSION_MAJOR})
set(CPACK_DEBIAN_LIB_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_LIB_PACKAGE_RECOMMENDS "libvulkan1, mesa-vulkan-drivers")
# the shlibs file (programs built against libvkformer.so.0 depend on this package); CPack's
# postinst and postrm run ldconfig. (A setting of every package; libvkformer0 alone has a shared
# library.)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_LIB_DESCRIPTION "transformer inference on any Vulkan GPU: shared library
libvkformer runs transformer models on a Vulkan device or on its CPU reference
backend (include/vkformer.h).")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libvkformer-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_DEV_DEPENDS lib)
# vkformer.pc's Requires.private (glslang, SPIRV-Tools, libcjson) and Libs.private (curl,
# archive, crypto), vkformerConfig.cmake's find_dependency(cJSON)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "glslang-dev, spirv-tools, libcjson-dev, libcurl4-openssl-dev | libcurl-dev, libarchive-dev, libssl-dev")
set(CPACK_DEBIAN_DEV_DESCRIPTION "transformer inference on any Vulkan GPU: development files
vkformer.h, the static library, pkg-config's vkformer.pc and the CMake package
(find_package(vkformer), target vkformer::vkformer).")
include(CPack)
