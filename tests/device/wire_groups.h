// The device's dwords as a readable sequence for the tests: ALIGNs dropped, a primitive
// and its repeats (copies, CONT, junk) as "NAME*", a lone one as "NAME", data as "D".
#pragma once

#include <string>
#include <vector>

#include "fisrig/link/primitives.h"

namespace fisrig::test {

inline std::vector<std::string> wire_groups(const std::vector<link::LinkWord>& words, size_t from = 0) {
  std::vector<std::string> out;
  bool in_cont = false;
  uint32_t last = 0;
  for (size_t i = from; i < words.size(); ++i) {
    const link::LinkWord& w = words[i];
    if (w.k && w.data == link::prim::kAlign) continue;
    if (w.k && w.data == link::prim::kCont) {
      in_cont = true;
      if (!out.empty() && out.back().back() != '*') out.back() += "*";
      continue;
    }
    if (!w.k) {
      if (in_cont) continue;  // junk
      out.push_back("D");
      last = 0;
      continue;
    }
    in_cont = false;
    std::string name(link::primitive_name(w.data));
    if (name.empty()) name = "?";
    if (!out.empty() && w.data == last) {
      if (out.back().back() != '*') out.back() += "*";
    } else {
      out.push_back(name);
    }
    last = w.data;
  }
  return out;
}

}  // namespace fisrig::test
