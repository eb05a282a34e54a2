// fisrig-tlp: the simulated controller's TLP codec (fisrig/nvme/tlp.h) on text, a TLP a line.
//   fisrig-tlp decode   hex bytes in, "field=value ..." out (or "error: why")
//   fisrig-tlp encode   "field=value ..." in, hex bytes out
//   fisrig-tlp beats    hex bytes in, the PHY stream's beats out ("dat/be ...", hex)
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>

#include "fisrig/nvme/tlp.h"

using fisrig::nvme::Tlp;

namespace {

std::string hex(const std::vector<uint8_t>& b) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (uint8_t x : b)
    s += d[x >> 4], s += d[x & 15];
  return s;
}

bool unhex(const std::string& s, std::vector<uint8_t>& out) {
  out.clear();
  if (s.size() % 2)
    return false;
  for (size_t k = 0; k < s.size(); k += 2) {
    char* end = nullptr;
    std::string two = s.substr(k, 2);
    unsigned long v = std::strtoul(two.c_str(), &end, 16);
    if (*end)
      return false;
    out.push_back(uint8_t(v));
  }
  return true;
}

void print(const Tlp& t) {
  std::printf("fmt_type=%u tc=%u attr=%u td=%d ep=%d length=%u requester_id=%u completer_id=%u tag=%u first_be=%u "
              "last_be=%u address=%llu status=%u bcm=%d byte_count=%u lower_address=%u data=%s\n",
              t.fmt_type, t.tc, t.attr, t.td, t.ep, t.length, t.requester_id, t.completer_id, t.tag, t.first_be,
              t.last_be, static_cast<unsigned long long>(t.address), t.status, t.bcm, t.byte_count, t.lower_address,
              hex(t.data).c_str());
}

bool parse(const std::string& line, Tlp& t, std::string& why) {
  std::istringstream in(line);
  std::string kv;
  while (in >> kv) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos) {
      why = "not field=value: " + kv;
      return false;
    }
    std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
    if (k == "data") {
      if (!unhex(v, t.data)) {
        why = "data is not hex";
        return false;
      }
      continue;
    }
    char* end = nullptr;
    unsigned long long n = std::strtoull(v.c_str(), &end, 0);
    if (*end || v.empty()) {
      why = "not a number: " + kv;
      return false;
    }
    if (k == "fmt_type") t.fmt_type = uint8_t(n);
    else if (k == "tc") t.tc = uint8_t(n);
    else if (k == "attr") t.attr = uint8_t(n);
    else if (k == "td") t.td = n;
    else if (k == "ep") t.ep = n;
    else if (k == "length") t.length = uint16_t(n);
    else if (k == "requester_id") t.requester_id = uint16_t(n);
    else if (k == "completer_id") t.completer_id = uint16_t(n);
    else if (k == "tag") t.tag = uint8_t(n);
    else if (k == "first_be") t.first_be = uint8_t(n);
    else if (k == "last_be") t.last_be = uint8_t(n);
    else if (k == "address") t.address = n;
    else if (k == "status") t.status = uint8_t(n);
    else if (k == "bcm") t.bcm = n;
    else if (k == "byte_count") t.byte_count = uint16_t(n);
    else if (k == "lower_address") t.lower_address = uint8_t(n);
    else {
      why = "no field " + k;
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc == 2 ? argv[1] : "";
  if (mode != "decode" && mode != "encode" && mode != "beats") {
    std::fprintf(stderr, "usage: fisrig-tlp decode|encode|beats  (a TLP a line on stdin)\n");
    return 2;
  }
  std::string line;
  while (std::getline(std::cin, line)) {
    std::vector<uint8_t> bytes;
    std::string why;
    if (mode == "encode") {
      Tlp t;
      if (!parse(line, t, why)) {
        std::printf("error: %s\n", why.c_str());
        continue;
      }
      std::printf("%s\n", hex(fisrig::nvme::encode(t)).c_str());
      continue;
    }
    if (!unhex(line, bytes)) {
      std::printf("error: not hex\n");
      continue;
    }
    if (mode == "beats") {
      for (const auto& [dat, be] : fisrig::nvme::to_beats(bytes))
        std::printf("%llx/%x ", static_cast<unsigned long long>(dat), be);
      std::printf("\n");
      continue;
    }
    Tlp t;
    if (!fisrig::nvme::decode(bytes.data(), bytes.size(), t, &why))
      std::printf("error: %s\n", why.c_str());
    else
      print(t);
  }
  return 0;
}
