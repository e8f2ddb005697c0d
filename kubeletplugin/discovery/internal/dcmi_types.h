// The slice of Huawei's DCMI C API (libdcmi.so, dcmi_interface_api.h) that the probe calls and the
// fake library exports, declared here so that neither needs the Ascend driver's header. Names,
// values and layouts follow dcmi_interface_api.h as shipped with the Ascend driver and used by
// Ascend/mind-cluster (ascend-common/devmanager/dcmi) — docs/reference/hardware.md §1.6. Plain C
// types only.
#ifndef XPU_KUBELETPLUGIN_DISCOVERY_INTERNAL_DCMI_TYPES_H_
#define XPU_KUBELETPLUGIN_DISCOVERY_INTERNAL_DCMI_TYPES_H_

namespace xpu::discovery::dcmi {

// Return codes: 0 or DCMI_ERROR_CODE_BASE (-8000) minus a small number; those the probe and the
// fake library use (dcmi.cc names them all).
inline constexpr int kOk = 0;
inline constexpr int kErrInvalidParameter = -8001;
inline constexpr int kErrInnerErr = -8005;
inline constexpr int kErrTimeOut = -8006;
inline constexpr int kErrInvalidDeviceId = -8007;
inline constexpr int kErrDeviceNotExist = -8008;
inline constexpr int kErrNotReady = -8012;
inline constexpr int kErrFileOperateFail = -8014;
inline constexpr int kErrResourceOccupied = -8020;
inline constexpr int kErrNotSupport = -8255;

inline constexpr int kMaxCardNum = 64;      // MAX_CARD_NUM
inline constexpr int kMaxChipNameLen = 32;  // MAX_CHIP_NAME_LEN
inline constexpr int kMaxVerLen = 255;      // MAX_VER_LEN (version buffers)
inline constexpr int kProductTypeLen = 64;  // ASSUMED ample for dcmi_get_product_type

struct dcmi_chip_info {
  unsigned char chip_type[kMaxChipNameLen];  // "Ascend"
  unsigned char chip_name[kMaxChipNameLen];  // "910B3"
  unsigned char chip_ver[kMaxChipNameLen];   // "V1"
  unsigned int aicore_cnt;
};

struct dcmi_pcie_info_all {  // dcmi_get_device_pcie_info_v2; 64 bytes
  unsigned int venderid;
  unsigned int subvenderid;
  unsigned int deviceid;
  unsigned int subdeviceid;
  int domain;
  unsigned int bdf_busid;
  unsigned int bdf_deviceid;
  unsigned int bdf_funcid;
  unsigned char reserve[32];
};

struct dcmi_hbm_info {
  unsigned long long memory_size;   // MB
  unsigned int freq;                // MHz
  unsigned long long memory_usage;  // MB
  int temp;
  unsigned int bandwith_util_rate;
};

enum dcmi_ip_addr_type {
  DCMI_IPADDR_TYPE_V4 = 0,
  DCMI_IPADDR_TYPE_V6 = 1,
  DCMI_IPADDR_TYPE_ANY = 2
};

struct dcmi_ip_addr {
  union {
    unsigned char ip6[16];
    unsigned char ip4[4];
  } u_addr;
  enum dcmi_ip_addr_type ip_type;
};

enum dcmi_port_type { DCMI_VNIC_PORT = 0, DCMI_ROCE_PORT = 1, DCMI_INVALID_PORT };

// dcmi_get_topo_info_by_device_id types as the current header (A3-era drivers) numbers them.
// ASSUMED for older 910B-only drivers too: their header stops at PIX (BUTT=6) and keeps the same
// values below it; a 6 from such a driver would read as "sio". Not verified on hardware.
inline constexpr int kTopoSelf = 0;
inline constexpr int kTopoSys = 1;
inline constexpr int kTopoPhb = 2;
inline constexpr int kTopoHccs = 3;
inline constexpr int kTopoPxb = 4;
inline constexpr int kTopoPix = 5;
inline constexpr int kTopoSio = 6;
inline constexpr int kTopoHccsSw = 7;
inline constexpr int kTopoUb = 8;

// dcmi_get_device_info: main command DCMI_MAIN_CMD_HCCS (16) with sub-command
// DCMI_HCCS_CMD_GET_STATUS (0) fills dcmi_hccs_statues. npu-smi reports the HCCS as healthy when
// pcs_status is 0 and hdlc_status is DCMI_HDLC_STATUS_OK (0x3).
inline constexpr int kMainCmdHccs = 16;
inline constexpr unsigned kHccsCmdGetStatus = 0;
inline constexpr unsigned kHdlcStatusOk = 0x3;

struct dcmi_hccs_statues {  // sic: the header's spelling
  unsigned int pcs_status;
  unsigned int hdlc_status;
  unsigned char reserve[4];
};

// Sub-command DCMI_HCCS_CMD_GET_STATISTIC_INFO_U64 (5) fills dcmi_hccs_statistic_info_u64: per
// PCS (HCCS macro) the flits sent and received and the CRC error and retry counts since the
// driver loaded. On 910B (and 900-class A3) macros 1-7 carry HCCS; npu-exporter reports those.
inline constexpr unsigned kHccsCmdGetStatisticInfoU64 = 5;
inline constexpr int kHccsMaxPcs = 16;
inline constexpr int kHccsFirstPcs = 1;
inline constexpr int kHccsLastPcs = 7;
struct dcmi_hccs_statistic_info_u64 {
  unsigned long long tx_cnt[kHccsMaxPcs];
  unsigned long long rx_cnt[kHccsMaxPcs];
  unsigned long long crc_err_cnt[kHccsMaxPcs];
  unsigned long long retry_cnt[kHccsMaxPcs];
  unsigned long long reserved[64];
};

// dcmi_get_device_network_health: reachability of the NPU's RoCE port (enum
// dcmi_rdfx_detect_result).
inline constexpr int kDetectOk = 0;
inline constexpr int kDetectSockFail = 1;
inline constexpr int kDetectRecvTimeout = 2;
inline constexpr int kDetectUnreach = 3;
inline constexpr int kDetectTimeExceeded = 4;
inline constexpr int kDetectFault = 5;
inline constexpr int kDetectInit = 6;
inline constexpr int kDetectThreadErr = 7;
inline constexpr int kDetectIpSet = 8;

// dcmi_get_device_component_static_version components (enum dcmi_component_type). npu-smi reads
// the firmware version from IMU on 910 and from HILINK on 910B, 910_93 and 310P.
inline constexpr int kComponentNve = 0;
inline constexpr int kComponentXloader = 1;
inline constexpr int kComponentImu = 8;
inline constexpr int kComponentHilink = 18;

// Telemetry. dcmi_get_device_utilization_rate's input_type: 2 is the AI Core, what npu-smi and
// npu-exporter show as the NPU's utilisation. dcmi_get_device_ecc_info's device type
// DCMI_DEVICE_TYPE_HBM (enum dcmi_device_type: DDR 0, SRAM 1, HBM 2, NPU 3). Both as in
// mind-cluster's devmanager/dcmi; not verified on hardware.
inline constexpr int kUtilizationAiCore = 2;
inline constexpr int kDeviceTypeHbm = 2;

struct dcmi_ecc_info {
  int enable_flag;
  unsigned int single_bit_error_cnt;  // since the driver loaded (corrected)
  unsigned int double_bit_error_cnt;  // (uncorrected)
  unsigned int total_single_bit_error_cnt;
  unsigned int total_double_bit_error_cnt;
  unsigned int single_bit_isolated_pages_cnt;
  unsigned int double_bit_isolated_pages_cnt;
};

// Virtual NPUs (vNPU): dcmi_get_device_info with main command DCMI_MAIN_CMD_VDEV_MNG (52). Sub
// command GET_TOTAL_RESOURCE (1) fills dcmi_soc_total_resource: the chip's whole computing
// resource and the ids of the vdevices that exist; GET_VDEV_RESOURCE (0) fills
// dcmi_vdev_query_stru for the vdev_id the caller sets: its name (the template) and resources.
// A chip or driver without virtualisation answers NOT_SUPPORT. dcmi_create_vdevice creates one
// from a template name ("vir05_1c_16g"), dcmi_set_destroy_vdevice destroys it. Layouts as
// dcmi_interface_api.h declares them (DCMI_VDEV_RES_NAME_LEN 16, DCMI_VDEV_FOR_RESERVE 32,
// DCMI_SOC_SPLIT_MAX 32, TEMPLATE_NAME_LEN 32).
inline constexpr int kMainCmdVdevMng = 52;
inline constexpr unsigned kVmngSubCmdGetVdevResource = 0;
inline constexpr unsigned kVmngSubCmdGetTotalResource = 1;
inline constexpr unsigned kVmngSubCmdGetFreeResource = 2;
inline constexpr int kVdevResNameLen = 16;
inline constexpr int kVdevForReserve = 32;
inline constexpr int kSocSplitMax = 32;
inline constexpr int kTemplateNameLen = 32;
inline constexpr unsigned kVdevIdAuto = 0xFFFFFFFF;  // create: let the driver pick the id

struct dcmi_base_resource {
  unsigned long long token;
  unsigned long long token_max;
  unsigned long long task_timeout;
  unsigned int vfg_id;
  unsigned char vip_mode;
  unsigned char reserved[kVdevForReserve - 1];
};

struct dcmi_computing_resource {
  float aic;  // AI Cores
  float aiv;
  unsigned short dsa;
  unsigned short rtsq;
  unsigned short acsq;
  unsigned short cdqm;
  unsigned short c_core;
  unsigned short ffts;
  unsigned short sdma;
  unsigned short pcie_dma;
  unsigned long long memory_size;  // MB
  unsigned int event_id;
  unsigned int notify_id;
  unsigned int stream_id;
  unsigned int model_id;
  unsigned short topic_schedule_aicpu;
  unsigned short host_ctrl_cpu;
  unsigned short host_aicpu;
  unsigned short device_aicpu;  // AI CPUs
  unsigned short topic_ctrl_cpu_slot;
  unsigned char reserved[kVdevForReserve];
};

struct dcmi_media_resource {
  float jpegd;
  float jpege;
  float vpc;
  float vdec;
  float pngd;
  float venc;
  unsigned char reserved[kVdevForReserve];
};

struct dcmi_vdev_query_info {
  char name[kVdevResNameLen];  // the template it was made from
  unsigned int status;
  unsigned int is_container_used;
  unsigned int vfid;
  unsigned int vfg_id;
  unsigned long long container_id;
  dcmi_base_resource base;
  dcmi_computing_resource computing;
  dcmi_media_resource media;
};

struct dcmi_vdev_query_stru {
  unsigned int vdev_id;  // in: which vdevice
  dcmi_vdev_query_info query_info;
};

struct dcmi_soc_total_resource {
  unsigned int vdev_num;
  unsigned int vdev_id[kSocSplitMax];
  unsigned int vfg_num;
  unsigned int vfg_bitmap;
  dcmi_base_resource base;
  dcmi_computing_resource computing;
  dcmi_media_resource media;
};

struct dcmi_create_vdev_res_stru {
  unsigned int vdev_id;  // kVdevIdAuto, or the id wanted
  unsigned int vfg_id;   // kVdevIdAuto, or the group wanted
  char template_name[kTemplateNameLen];
  unsigned char reserved[64];
};

struct dcmi_create_vdev_out {
  unsigned int vdev_id;
  unsigned int pcie_bus;
  unsigned int pcie_device;
  unsigned int pcie_func;
  unsigned int vfg_id;
  unsigned char reserved[kVdevForReserve];
};

// Function types, one per symbol.
using InitFn = int (*)();
using GetVersionFn = int (*)(char*, unsigned int);  // dcmi_get_dcmi_version, ..._driver_version
using GetCardListFn = int (*)(int* card_num, int* card_list, int list_len);
using GetDeviceNumInCardFn = int (*)(int card_id, int* device_num);
using GetDeviceIdInCardFn = int (*)(int card_id, int* device_id_max, int* mcu_id, int* cpu_id);
using GetDeviceLogicIdFn = int (*)(int* device_logic_id, int card_id, int device_id);
using GetPhyIdFromLogicIdFn = int (*)(unsigned int logicid, unsigned int* phyid);
using GetChipInfoFn = int (*)(int card_id, int device_id, dcmi_chip_info* chip_info);
using GetPcieInfoFn = int (*)(int card_id, int device_id, dcmi_pcie_info_all* pcie_info);
using GetHbmInfoFn = int (*)(int card_id, int device_id, dcmi_hbm_info* hbm_info);
using GetHealthFn = int (*)(int card_id, int device_id, unsigned int* health);
using GetDeviceIpFn = int (*)(int card_id, int device_id, enum dcmi_port_type input_type,
                              int port_id, dcmi_ip_addr* ip, dcmi_ip_addr* mask);
using GetProductTypeFn = int (*)(int card_id, int device_id, char* product_type_str, int buf_size);
using GetDeviceInfoFn = int (*)(int card_id, int device_id, int main_cmd, unsigned int sub_cmd,
                                void* buf, unsigned int* size);
using GetNetworkHealthFn = int (*)(int card_id, int device_id, int* result);
using GetComponentVersionFn = int (*)(int card_id, int device_id, int component_type,
                                      unsigned char* version_str, unsigned int len);
using GetTemperatureFn = int (*)(int card_id, int device_id, int* celsius);
using GetPowerInfoFn = int (*)(int card_id, int device_id, int* deciwatts);  // 0.1 W units
using GetUtilizationRateFn = int (*)(int card_id, int device_id, int input_type,
                                     unsigned int* percent);
using GetEccInfoFn = int (*)(int card_id, int device_id, int device_type, dcmi_ecc_info* info);
using CreateVdeviceFn = int (*)(int card_id, int device_id, dcmi_create_vdev_res_stru* vdev,
                                dcmi_create_vdev_out* out);
using DestroyVdeviceFn = int (*)(int card_id, int device_id, unsigned int vdevid);
using GetTopoInfoFn = int (*)(int card_id1, int device_id1, int card_id2, int device_id2,
                              int* topo_type);

}  // namespace xpu::discovery::dcmi

#endif  // XPU_KUBELETPLUGIN_DISCOVERY_INTERNAL_DCMI_TYPES_H_
