# Makes an include that runs against the dependency graph a build error. For every library made with
# tower_library, the folders it owns and the libraries it may use (itself and what its LINKS reach) are written
# to layering_rules.cmake; CheckLayering.cmake reads every source and header of those folders before anything
# compiles, and fails the build naming each include of a library that is not reachable.

# The tower_library targets that `target` reaches through LINKS, itself included, into `out`.
function(tower_reachable target out)
  set(seen ${target})
  set(queue ${target})
  while(queue)
    list(POP_FRONT queue t)
    get_target_property(links ${t} TOWER_LINKS)
    foreach(l ${links})
      if(TARGET ${l} AND NOT l IN_LIST seen)
        get_target_property(dirs ${l} TOWER_DIRS)
        if(dirs)
          list(APPEND seen ${l})
          list(APPEND queue ${l})
        endif()
      endif()
    endforeach()
  endwhile()
  set(${out} ${seen} PARENT_SCOPE)
endfunction()

get_property(tower_libraries GLOBAL PROPERTY TOWER_LIBRARIES)
set(rules "# Written by cmake/Layering.cmake: each library's folders and the libraries it may include.\n")
string(APPEND rules "set(LIBRARIES ${tower_libraries})\n")
set(checked_files "")
foreach(lib ${tower_libraries})
  get_target_property(dirs ${lib} TOWER_DIRS)
  tower_reachable(${lib} allowed)
  string(APPEND rules "set(DIRS_${lib} \"${dirs}\")\nset(ALLOWED_${lib} ${allowed})\n")
  foreach(dir ${dirs})
    file(GLOB_RECURSE files CONFIGURE_DEPENDS "${dir}/*.h" "${dir}/*.cpp" "${dir}/*.cu" "${dir}/*.cuh")
    list(APPEND checked_files ${files})
  endforeach()
endforeach()
set(TOWER_LAYERING_RULES "${PROJECT_BINARY_DIR}/layering_rules.cmake")
file(WRITE "${TOWER_LAYERING_RULES}" "${rules}")

add_custom_command(
  OUTPUT "${PROJECT_BINARY_DIR}/layering.stamp"
  COMMAND ${CMAKE_COMMAND} -DRULES=${TOWER_LAYERING_RULES} -DROOT=${PROJECT_SOURCE_DIR}
          -P ${PROJECT_SOURCE_DIR}/cmake/CheckLayering.cmake
  COMMAND ${CMAKE_COMMAND} -E touch "${PROJECT_BINARY_DIR}/layering.stamp"
  DEPENDS ${checked_files} "${TOWER_LAYERING_RULES}" "${PROJECT_SOURCE_DIR}/cmake/CheckLayering.cmake"
  COMMENT "Checking that no include runs against the library graph (docs/architecture.md)"
  VERBATIM)
add_custom_target(tower_layering ALL DEPENDS "${PROJECT_BINARY_DIR}/layering.stamp")
foreach(lib ${tower_libraries})
  add_dependencies(${lib} tower_layering)
endforeach()
