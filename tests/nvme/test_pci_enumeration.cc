// The rig's enumeration (firmware/core's fisrig/pcie_enum.h) against the simulated
// controller's PCI function (sim/nvme's pci_function.h): the function found, BAR0 placed,
// payload sizes and MSI-X set as the rig needs them, and each way a function can fail it
// (absent, not ready in time, not NVMe, a BAR that does not fit, a broken capability list,
// no MSI-X table big enough) ending in its own result.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "fisrig/nvme/pci_function.h"
#include "rig_plan.h"

extern "C" {
#include "fisrig/nvme.h"
#include "fisrig/pcie_enum.h"
}

namespace {

using fisrig::nvme::PciFunction;

// The link as the firmware sees it: config requests to 1:0.0 reach the function, any other
// gets UR (or, `silent`, no completion at all); time passes only in delay_us.
struct Link {
  PciFunction fn;
  uint64_t now_ns = 0;
  bool silent = false;
  uint32_t delays = 0;
  std::vector<std::pair<uint64_t, uint32_t>> mem_writes;
  std::map<uint16_t, uint32_t> writes;  // the last value written at each offset

  explicit Link(PciFunction f = PciFunction()) : fn(f) {}

  static unsigned read(void* ctx, uint8_t bus, uint8_t dev, uint8_t fn, uint16_t offset, uint32_t* value) {
    Link& l = *static_cast<Link*>(ctx);
    if (l.silent)
      return FISRIG_PCIE_CPL_NONE;
    if (bus != 1 || dev != 0 || fn != 0)
      return FISRIG_PCIE_CPL_UR;
    return l.fn.config_read(offset, *value, l.now_ns);
  }
  static unsigned write(void* ctx, uint8_t bus, uint8_t dev, uint8_t fn, uint16_t offset, uint32_t value) {
    Link& l = *static_cast<Link*>(ctx);
    if (l.silent)
      return FISRIG_PCIE_CPL_NONE;
    if (bus != 1 || dev != 0 || fn != 0)
      return FISRIG_PCIE_CPL_UR;
    l.writes[offset] = value;
    return l.fn.config_write(offset, value, 0xF, l.now_ns);
  }
  static void mem_write(void* ctx, uint64_t address, uint32_t value) {
    Link& l = *static_cast<Link*>(ctx);
    l.mem_writes.emplace_back(address, value);
    if (l.fn.bar0_hit(address, 4))
      l.fn.msix_write(uint32_t(address - l.fn.bar0()), value);
  }
  static void delay(void* ctx, uint32_t us) {
    Link& l = *static_cast<Link*>(ctx);
    l.now_ns += uint64_t(us) * 1000;
    ++l.delays;
  }
  fisrig_pcie_ops ops() { return {this, read, write, mem_write, delay}; }
};

// Not aligned to the BAR: the BAR goes to the next 16 KiB.
fisrig_pcie_plan plan() { return fisrig::test::rig_plan(0x4000'1000, 17); }

TEST(PciEnumeration, SetsUpTheSimulatedControllersFunctionAsTheRigNeedsIt) {
  Link link;
  fisrig_pcie_ops ops = link.ops();
  fisrig_pcie_plan p = plan();
  fisrig_pcie_function f;
  ASSERT_EQ(fisrig_pcie_enumerate(&ops, &p, &f), FISRIG_PCIE_ENUM_OK);
  EXPECT_EQ(f.vendor, FISRIG_NVME_SIM_VENDOR_ID);
  EXPECT_EQ(f.device, FISRIG_NVME_SIM_DEVICE_ID);
  EXPECT_EQ(f.class_code, FISRIG_PCI_CLASS_NVME);
  EXPECT_EQ(f.bar0, 0x4000'4000u);
  EXPECT_EQ(f.bar0_bytes, PciFunction::kBar0Bytes);
  EXPECT_EQ(link.fn.bar0(), 0x4000'4000u);
  EXPECT_TRUE(link.fn.memory_enabled());
  EXPECT_TRUE(link.fn.bus_master());
  // The function supports 512-byte payloads; the rig takes 256, and reads no larger.
  EXPECT_EQ(f.max_payload, 256);
  EXPECT_EQ(f.max_read_request, 256);
  EXPECT_EQ(link.fn.max_payload(), 256u);
  EXPECT_EQ(link.fn.max_read_request(), 256u);
  EXPECT_EQ(f.pcie_cap, PciFunction::kCapPcie);
  EXPECT_EQ(f.msix_cap, PciFunction::kCapMsix);
  EXPECT_EQ(f.msix_entries, 65);
  EXPECT_EQ(f.msix_table_offset, PciFunction::kMsixTable);
  EXPECT_TRUE(link.fn.msix_enabled());
  for (uint16_t v = 0; v < 17; ++v) {
    PciFunction::MsixMessage m = link.fn.msix(v);
    EXPECT_EQ(m.address, 0x0010'0FF0u);
    EXPECT_EQ(m.data, v);
    EXPECT_FALSE(m.masked) << v;
  }
  EXPECT_TRUE(link.fn.msix(17).masked);  // entries past those asked for stay masked
  EXPECT_EQ(f.crs_retries, 0u);
  // Device Status (above Device Control) is written with zeros: its bits clear on a 1.
  EXPECT_EQ(link.writes.at(PciFunction::kCapPcie + FISRIG_PCIE_CAP_DEVCTL) >> 16, 0u);
}

TEST(PciEnumeration, TakesTheSmallerPayloadWhenTheFunctionSupportsLess) {
  Link link{PciFunction(65, 0)};
  fisrig_pcie_ops ops = link.ops();
  fisrig_pcie_plan p = plan();
  fisrig_pcie_function f;
  ASSERT_EQ(fisrig_pcie_enumerate(&ops, &p, &f), FISRIG_PCIE_ENUM_OK);
  EXPECT_EQ(f.max_payload, 128);
  EXPECT_EQ(link.fn.max_read_request(), 128u);
}

TEST(PciEnumeration, AsksAgainWhileTheFunctionIsNotReadyAndGivesUpPastItsTime) {
  Link link;
  link.fn.reset(3'500'000);  // ready 3.5 ms after the enumeration starts
  fisrig_pcie_ops ops = link.ops();
  fisrig_pcie_plan p = plan();
  fisrig_pcie_function f;
  ASSERT_EQ(fisrig_pcie_enumerate(&ops, &p, &f), FISRIG_PCIE_ENUM_OK);
  EXPECT_EQ(f.crs_retries, 4u);

  Link late;
  late.fn.reset(2'000'000'000);  // not before 2 s: past the second the plan allows
  ops = late.ops();
  EXPECT_EQ(fisrig_pcie_enumerate(&ops, &p, &f), FISRIG_PCIE_ENUM_NOT_READY);
  EXPECT_EQ(late.now_ns, 1'000'000'000u);
}

TEST(PciEnumeration, NoFunctionThereIsSaidSo) {
  Link link;
  fisrig_pcie_ops ops = link.ops();
  fisrig_pcie_plan p = plan();
  p.bus = 2;  // UR
  fisrig_pcie_function f;
  EXPECT_EQ(fisrig_pcie_enumerate(&ops, &p, &f), FISRIG_PCIE_ENUM_NO_DEVICE);
  link.silent = true;  // no completion at all
  p.bus = 1;
  EXPECT_EQ(fisrig_pcie_enumerate(&ops, &p, &f), FISRIG_PCIE_ENUM_NO_DEVICE);
  Link empty;
  empty.fn.poke(FISRIG_PCI_VENDOR_ID, 0xFFFFFFFFu);
  ops = empty.ops();
  EXPECT_EQ(fisrig_pcie_enumerate(&ops, &p, &f), FISRIG_PCIE_ENUM_NO_DEVICE);
  EXPECT_STREQ(fisrig_pcie_enum_why(FISRIG_PCIE_ENUM_NO_DEVICE), "no PCI function answers below the root port");
}

TEST(PciEnumeration, RefusesWhatIsNotAnNvmeEndpoint) {
  Link sata;
  sata.fn.poke(FISRIG_PCI_CLASS_REVISION, 0x010601u << 8);  // an AHCI controller
  fisrig_pcie_ops ops = sata.ops();
  fisrig_pcie_plan p = plan();
  fisrig_pcie_function f;
  EXPECT_EQ(fisrig_pcie_enumerate(&ops, &p, &f), FISRIG_PCIE_ENUM_NOT_NVME);
  Link bridge;
  bridge.fn.poke(0x0C, 0x01u << 16);  // header type 1: a bridge
  ops = bridge.ops();
  EXPECT_EQ(fisrig_pcie_enumerate(&ops, &p, &f), FISRIG_PCIE_ENUM_NOT_NVME);
}

TEST(PciEnumeration, ABarThatDoesNotFitTheWindowIsRefused) {
  Link link;
  fisrig_pcie_ops ops = link.ops();
  fisrig_pcie_plan p = plan();
  p.window_bytes = 16 * 1024;  // 16 KiB from 0x40001000: the aligned BAR would end past it
  fisrig_pcie_function f;
  EXPECT_EQ(fisrig_pcie_enumerate(&ops, &p, &f), FISRIG_PCIE_ENUM_BAR);
  EXPECT_FALSE(link.fn.memory_enabled());
  Link io;
  io.fn.poke(FISRIG_PCI_BAR0, 0x1);  // an I/O BAR
  ops = io.ops();
  p = plan();
  EXPECT_EQ(fisrig_pcie_enumerate(&ops, &p, &f), FISRIG_PCIE_ENUM_BAR);
}

TEST(PciEnumeration, ABrokenCapabilityListEndsTheWalk) {
  fisrig_pcie_plan p = plan();
  fisrig_pcie_function f;
  Link loop;  // PCI Express's next points back at power management's
  loop.fn.poke(PciFunction::kCapPcie, FISRIG_PCI_CAP_ID_PCIE | PciFunction::kCapPm << 8 | 0x0002u << 16);
  fisrig_pcie_ops ops = loop.ops();
  EXPECT_EQ(fisrig_pcie_enumerate(&ops, &p, &f), FISRIG_PCIE_ENUM_CAPABILITIES);
  Link none;
  none.fn.poke(FISRIG_PCI_COMMAND, 0);  // no capability list in Status
  ops = none.ops();
  EXPECT_EQ(fisrig_pcie_enumerate(&ops, &p, &f), FISRIG_PCIE_ENUM_CAPABILITIES);
  Link into_header;
  into_header.fn.poke(FISRIG_PCI_CAP_PTR, 0x10);  // a pointer into the header
  ops = into_header.ops();
  EXPECT_EQ(fisrig_pcie_enumerate(&ops, &p, &f), FISRIG_PCIE_ENUM_CAPABILITIES);
  Link no_pcie;  // MSI-X's next is 0: the PCI Express capability is not in the list
  no_pcie.fn.poke(PciFunction::kCapMsix, FISRIG_PCI_CAP_ID_MSIX | 0u << 8 | 64u << 16);
  ops = no_pcie.ops();
  EXPECT_EQ(fisrig_pcie_enumerate(&ops, &p, &f), FISRIG_PCIE_ENUM_NO_PCIE_CAP);
}

TEST(PciEnumeration, AnMsixTableTooSmallOrOutsideBar0IsRefused) {
  fisrig_pcie_plan p = plan();
  fisrig_pcie_function f;
  Link small{PciFunction(8)};
  fisrig_pcie_ops ops = small.ops();
  EXPECT_EQ(fisrig_pcie_enumerate(&ops, &p, &f), FISRIG_PCIE_ENUM_NO_MSIX);  // 17 asked, 8 there
  Link bar2;
  bar2.fn.poke(PciFunction::kCapMsix + FISRIG_PCI_MSIX_TABLE, PciFunction::kMsixTable | 2);
  ops = bar2.ops();
  EXPECT_EQ(fisrig_pcie_enumerate(&ops, &p, &f), FISRIG_PCIE_ENUM_NO_MSIX);
  EXPECT_TRUE(bar2.mem_writes.empty());  // nothing written where the table is not
}

TEST(PciEnumeration, EveryResultHasItsWords) {
  for (int r = 0; r < FISRIG_PCIE_ENUM_RESULTS; ++r)
    EXPECT_STRNE(fisrig_pcie_enum_why(r), "unknown enumeration result") << r;
  EXPECT_STREQ(fisrig_pcie_enum_why(FISRIG_PCIE_ENUM_RESULTS), "unknown enumeration result");
}

TEST(PciFunction, TheHostsWritesTakeOnlyWritableBitsAndResetUndoesThem) {
  PciFunction fn;
  uint32_t v = 0;
  fn.config_write(FISRIG_PCI_VENDOR_ID, 0, 0xF, 0);
  fn.config_read(FISRIG_PCI_VENDOR_ID, v, 0);
  EXPECT_EQ(v, FISRIG_NVME_SIM_VENDOR_ID | FISRIG_NVME_SIM_DEVICE_ID << 16);
  fn.config_write(FISRIG_PCI_BAR0, 0xFFFFFFFFu, 0xF, 0);
  fn.config_read(FISRIG_PCI_BAR0, v, 0);
  EXPECT_EQ(v, (~(PciFunction::kBar0Bytes - 1) & FISRIG_PCI_BAR_ADDR_MASK) | FISRIG_PCI_BAR_MEM_TYPE_64);
  fn.config_write(FISRIG_PCI_COMMAND, 0xFFFFu, 0x1, 0);  // byte 0 alone: memory and master, not INTx
  EXPECT_TRUE(fn.memory_enabled() && fn.bus_master());
  fn.config_read(FISRIG_PCI_COMMAND, v, 0);
  EXPECT_EQ(v & FISRIG_PCI_COMMAND_INTX_DISABLE, 0u);
  fn.reset(5000);
  EXPECT_FALSE(fn.memory_enabled());
  EXPECT_EQ(fn.config_read(FISRIG_PCI_VENDOR_ID, v, 4999), FISRIG_PCIE_CPL_CRS);
  EXPECT_EQ(fn.config_write(FISRIG_PCI_COMMAND, 6, 0xF, 4999), FISRIG_PCIE_CPL_CRS);
  EXPECT_EQ(fn.config_read(FISRIG_PCI_VENDOR_ID, v, 5000), FISRIG_PCIE_CPL_SC);
  EXPECT_EQ(fn.max_read_request(), 512u);  // the specification's value after reset
  EXPECT_EQ(fn.max_payload(), 128u);
}

}  // namespace
