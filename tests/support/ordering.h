// strictly_increasing: whether every value is above the one before it, the order every
// run of IDs from one generator must have (UUIDv7 and ULID compared as text).
#pragma once

#include <algorithm>
#include <vector>

namespace idforge::test {

template <typename T>
bool strictly_increasing(const std::vector<T>& values) {
  return std::adjacent_find(values.begin(), values.end(),
                            [](const T& a, const T& b) { return a >= b; }) == values.end();
}

}  // namespace idforge::test
