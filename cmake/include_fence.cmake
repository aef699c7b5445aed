# idforge_include_fence(TARGET DIRS dir... [EXCEPT header...]): makes including a header
# of the named folders a compile error in TARGET's own sources, however it is reached
# (directly or through another header). Every library's headers are included from one
# root, src/ ("coord/lease_keeper.h"), so linking alone cannot hide a layer's headers
# from a target above it; this does. For each header under src/DIR it writes a stub of
# the same path that holds only an #error into a directory of the target's own, searched
# before src/. DIRS are relative to src/; EXCEPT lists headers of those folders that stay
# allowed (relative to src/ too). Headers added later are fenced at the next configure
# (CONFIGURE_DEPENDS).
function(idforge_include_fence target)
  cmake_parse_arguments(FENCE "" "WHY" "DIRS;EXCEPT" ${ARGN})
  set(fence_dir ${CMAKE_BINARY_DIR}/include_fence/${target})
  file(REMOVE_RECURSE ${fence_dir})
  foreach(dir IN LISTS FENCE_DIRS)
    file(GLOB_RECURSE headers CONFIGURE_DEPENDS RELATIVE ${PROJECT_SOURCE_DIR}/src
         ${PROJECT_SOURCE_DIR}/src/${dir}/*.h)
    foreach(header IN LISTS headers)
      if(header IN_LIST FENCE_EXCEPT)
        continue()
      endif()
      file(WRITE ${fence_dir}/${header}
           "#error \"${header} is not for ${target}: ${FENCE_WHY} (docs/architecture.md, Layers)\"\n")
    endforeach()
  endforeach()
  target_include_directories(${target} BEFORE PRIVATE ${fence_dir})
endfunction()
