//! `PJRT_Api`, the plugin's table of entry points, and the FFI extension's structs: the part
//! of the PJRT C API that says where each function is. Described from the header of PJRT API
//! 0.81 (the oldest version the runner takes); later versions only append to the table (0.114's
//! header is 1144 bytes against 0.81's 984, every earlier slot in its place: the layout test
//! holds this description to each header the set-up installs).

use super::*;

/// The start of `PJRT_Api`, enough to read its size and version before trusting the rest.
#[repr(C)]
#[derive(Debug)]
pub struct PJRT_Api_Head {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
    pub pjrt_api_version: PJRT_Api_Version,
}

/// Declares `PJRT_Api` (its head, then one entry point a slot, in the header's order) and
/// [`API_SLOTS`], each slot's Rust field with its C name and offset, for the layout test.
macro_rules! api_table {
    ($($field:ident: $t:ty = $c:literal,)*) => {
        /// `PJRT_Api` as of PJRT API 0.81: every slot of that version's table. A plugin's
        /// table is this long at least (`struct_size`); slots appended later are not read.
        #[repr(C)]
        #[derive(Debug)]
        pub struct PJRT_Api {
            pub struct_size: usize,
            pub extension_start: *mut PJRT_Extension_Base,
            pub pjrt_api_version: PJRT_Api_Version,
            $(pub $field: $t,)*
        }

        /// Each slot of [`PJRT_Api`]: its C name and its offset.
        pub const API_SLOTS: &[(&str, usize)] = &[
            $(($c, core::mem::offset_of!(PJRT_Api, $field)),)*
        ];
    };
}

api_table! {
    error_destroy: Option<unsafe extern "C" fn(*mut PJRT_Error_Destroy_Args)> = "PJRT_Error_Destroy",
    error_message: Option<unsafe extern "C" fn(*mut PJRT_Error_Message_Args)> = "PJRT_Error_Message",
    error_get_code: Option<unsafe extern "C" fn(*mut PJRT_Error_GetCode_Args) -> *mut PJRT_Error> = "PJRT_Error_GetCode",
    plugin_initialize: Fn = "PJRT_Plugin_Initialize",
    plugin_attributes: Fn = "PJRT_Plugin_Attributes",
    event_destroy: Fn = "PJRT_Event_Destroy",
    event_is_ready: Fn = "PJRT_Event_IsReady",
    event_error: Fn = "PJRT_Event_Error",
    event_await: Fn = "PJRT_Event_Await",
    event_on_ready: Fn = "PJRT_Event_OnReady",
    client_create: Fn = "PJRT_Client_Create",
    client_destroy: Fn = "PJRT_Client_Destroy",
    client_platform_name: Fn = "PJRT_Client_PlatformName",
    client_process_index: Fn = "PJRT_Client_ProcessIndex",
    client_platform_version: Fn = "PJRT_Client_PlatformVersion",
    client_devices: Fn = "PJRT_Client_Devices",
    client_addressable_devices: Fn = "PJRT_Client_AddressableDevices",
    client_lookup_device: Fn = "PJRT_Client_LookupDevice",
    client_lookup_addressable_device: Fn = "PJRT_Client_LookupAddressableDevice",
    client_addressable_memories: Fn = "PJRT_Client_AddressableMemories",
    client_compile: Fn = "PJRT_Client_Compile",
    client_default_device_assignment: Fn = "PJRT_Client_DefaultDeviceAssignment",
    client_buffer_from_host_buffer: Fn = "PJRT_Client_BufferFromHostBuffer",
    device_description_id: Fn = "PJRT_DeviceDescription_Id",
    device_description_process_index: Fn = "PJRT_DeviceDescription_ProcessIndex",
    device_description_attributes: Fn = "PJRT_DeviceDescription_Attributes",
    device_description_kind: Fn = "PJRT_DeviceDescription_Kind",
    device_description_debug_string: Fn = "PJRT_DeviceDescription_DebugString",
    device_description_to_string: Fn = "PJRT_DeviceDescription_ToString",
    device_get_description: Fn = "PJRT_Device_GetDescription",
    device_is_addressable: Fn = "PJRT_Device_IsAddressable",
    device_local_hardware_id: Fn = "PJRT_Device_LocalHardwareId",
    device_addressable_memories: Fn = "PJRT_Device_AddressableMemories",
    device_default_memory: Fn = "PJRT_Device_DefaultMemory",
    device_memory_stats: Fn = "PJRT_Device_MemoryStats",
    memory_id: Fn = "PJRT_Memory_Id",
    memory_kind: Fn = "PJRT_Memory_Kind",
    memory_debug_string: Fn = "PJRT_Memory_DebugString",
    memory_to_string: Fn = "PJRT_Memory_ToString",
    memory_addressable_by_devices: Fn = "PJRT_Memory_AddressableByDevices",
    executable_destroy: Fn = "PJRT_Executable_Destroy",
    executable_name: Fn = "PJRT_Executable_Name",
    executable_num_replicas: Fn = "PJRT_Executable_NumReplicas",
    executable_num_partitions: Fn = "PJRT_Executable_NumPartitions",
    executable_num_outputs: Fn = "PJRT_Executable_NumOutputs",
    executable_size_of_generated_code_in_bytes: Fn = "PJRT_Executable_SizeOfGeneratedCodeInBytes",
    executable_get_cost_analysis: Fn = "PJRT_Executable_GetCostAnalysis",
    executable_output_memory_kinds: Fn = "PJRT_Executable_OutputMemoryKinds",
    executable_optimized_program: Fn = "PJRT_Executable_OptimizedProgram",
    executable_serialize: Fn = "PJRT_Executable_Serialize",
    loaded_executable_destroy: Fn = "PJRT_LoadedExecutable_Destroy",
    loaded_executable_get_executable: Fn = "PJRT_LoadedExecutable_GetExecutable",
    loaded_executable_addressable_devices: Fn = "PJRT_LoadedExecutable_AddressableDevices",
    loaded_executable_delete: Fn = "PJRT_LoadedExecutable_Delete",
    loaded_executable_is_deleted: Fn = "PJRT_LoadedExecutable_IsDeleted",
    loaded_executable_execute: Fn = "PJRT_LoadedExecutable_Execute",
    executable_deserialize_and_load: Fn = "PJRT_Executable_DeserializeAndLoad",
    loaded_executable_fingerprint: Fn = "PJRT_LoadedExecutable_Fingerprint",
    buffer_destroy: Fn = "PJRT_Buffer_Destroy",
    buffer_element_type: Fn = "PJRT_Buffer_ElementType",
    buffer_dimensions: Fn = "PJRT_Buffer_Dimensions",
    buffer_unpadded_dimensions: Fn = "PJRT_Buffer_UnpaddedDimensions",
    buffer_dynamic_dimension_indices: Fn = "PJRT_Buffer_DynamicDimensionIndices",
    buffer_get_memory_layout: Fn = "PJRT_Buffer_GetMemoryLayout",
    buffer_on_device_size_in_bytes: Fn = "PJRT_Buffer_OnDeviceSizeInBytes",
    buffer_device: Fn = "PJRT_Buffer_Device",
    buffer_memory: Fn = "PJRT_Buffer_Memory",
    buffer_delete: Fn = "PJRT_Buffer_Delete",
    buffer_is_deleted: Fn = "PJRT_Buffer_IsDeleted",
    buffer_copy_to_device: Fn = "PJRT_Buffer_CopyToDevice",
    buffer_to_host_buffer: Fn = "PJRT_Buffer_ToHostBuffer",
    buffer_is_on_cpu: Fn = "PJRT_Buffer_IsOnCpu",
    buffer_ready_event: Fn = "PJRT_Buffer_ReadyEvent",
    buffer_unsafe_pointer: Fn = "PJRT_Buffer_UnsafePointer",
    buffer_increase_external_reference_count: Fn = "PJRT_Buffer_IncreaseExternalReferenceCount",
    buffer_decrease_external_reference_count: Fn = "PJRT_Buffer_DecreaseExternalReferenceCount",
    buffer_opaque_device_memory_data_pointer: Fn = "PJRT_Buffer_OpaqueDeviceMemoryDataPointer",
    copy_to_device_stream_destroy: Fn = "PJRT_CopyToDeviceStream_Destroy",
    copy_to_device_stream_add_chunk: Fn = "PJRT_CopyToDeviceStream_AddChunk",
    copy_to_device_stream_total_bytes: Fn = "PJRT_CopyToDeviceStream_TotalBytes",
    copy_to_device_stream_granule_size: Fn = "PJRT_CopyToDeviceStream_GranuleSize",
    copy_to_device_stream_current_bytes: Fn = "PJRT_CopyToDeviceStream_CurrentBytes",
    topology_description_create: Fn = "PJRT_TopologyDescription_Create",
    topology_description_destroy: Fn = "PJRT_TopologyDescription_Destroy",
    topology_description_platform_name: Fn = "PJRT_TopologyDescription_PlatformName",
    topology_description_platform_version: Fn = "PJRT_TopologyDescription_PlatformVersion",
    topology_description_get_device_descriptions: Fn = "PJRT_TopologyDescription_GetDeviceDescriptions",
    topology_description_serialize: Fn = "PJRT_TopologyDescription_Serialize",
    topology_description_attributes: Fn = "PJRT_TopologyDescription_Attributes",
    compile: Fn = "PJRT_Compile",
    executable_output_element_types: Fn = "PJRT_Executable_OutputElementTypes",
    executable_output_dimensions: Fn = "PJRT_Executable_OutputDimensions",
    buffer_copy_to_memory: Fn = "PJRT_Buffer_CopyToMemory",
    client_create_view_of_device_buffer: Fn = "PJRT_Client_CreateViewOfDeviceBuffer",
    executable_fingerprint: Fn = "PJRT_Executable_Fingerprint",
    client_topology_description: Fn = "PJRT_Client_TopologyDescription",
    executable_get_compiled_memory_stats: Fn = "PJRT_Executable_GetCompiledMemoryStats",
    memory_kind_id: Fn = "PJRT_Memory_Kind_Id",
    execute_context_create: Fn = "PJRT_ExecuteContext_Create",
    execute_context_destroy: Fn = "PJRT_ExecuteContext_Destroy",
    buffer_copy_raw_to_host: Fn = "PJRT_Buffer_CopyRawToHost",
    async_host_to_device_transfer_manager_destroy: Fn = "PJRT_AsyncHostToDeviceTransferManager_Destroy",
    async_host_to_device_transfer_manager_transfer_data: Fn = "PJRT_AsyncHostToDeviceTransferManager_TransferData",
    client_create_buffers_for_async_host_to_device: Fn = "PJRT_Client_CreateBuffersForAsyncHostToDevice",
    async_host_to_device_transfer_manager_retrieve_buffer: Fn = "PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer",
    async_host_to_device_transfer_manager_device: Fn = "PJRT_AsyncHostToDeviceTransferManager_Device",
    async_host_to_device_transfer_manager_buffer_count: Fn = "PJRT_AsyncHostToDeviceTransferManager_BufferCount",
    async_host_to_device_transfer_manager_buffer_size: Fn = "PJRT_AsyncHostToDeviceTransferManager_BufferSize",
    async_host_to_device_transfer_manager_set_buffer_error: Fn = "PJRT_AsyncHostToDeviceTransferManager_SetBufferError",
    async_host_to_device_transfer_manager_add_metadata: Fn = "PJRT_AsyncHostToDeviceTransferManager_AddMetadata",
    client_dma_map: Fn = "PJRT_Client_DmaMap",
    client_dma_unmap: Fn = "PJRT_Client_DmaUnmap",
    client_create_uninitialized_buffer: Fn = "PJRT_Client_CreateUninitializedBuffer",
    client_update_global_process_info: Fn = "PJRT_Client_UpdateGlobalProcessInfo",
    topology_description_deserialize: Fn = "PJRT_TopologyDescription_Deserialize",
    client_create_alias_buffer: Fn = "PJRT_Client_CreateAliasBuffer",
    client_fulfill_alias_buffer: Fn = "PJRT_Client_FulfillAliasBuffer",
    loaded_executable_get_device_assignment: Fn = "PJRT_LoadedExecutable_GetDeviceAssignment",
}

/// How much of `PJRT_Api` the runner reads: the whole 0.81 table.
pub const API_PREFIX_SIZE: usize = core::mem::size_of::<PJRT_Api>();

/// The FFI extension's `PJRT_FFI_Register_Handler_Args` as the plugins read it (the same from
/// PJRT 0.81 to 0.115): no `extension_start`, 52 bytes (a plugin names the size it expects
/// when given another).
#[repr(C)]
#[derive(Debug)]
pub struct PJRT_FFI_Register_Handler_Args {
    pub struct_size: usize,
    pub target_name: *const c_char,
    pub target_name_size: usize,
    pub handler: *mut c_void,
    pub platform_name: *const c_char,
    pub platform_name_size: usize,
    pub traits: u32,
}

impl PJRT_FFI_Register_Handler_Args {
    /// 52: the end of `traits`.
    pub const STRUCT_SIZE: usize =
        core::mem::offset_of!(PJRT_FFI_Register_Handler_Args, traits) + core::mem::size_of::<u32>();
}

/// `PJRT_FFI_UserData`: a value for one execution, by the type id it was registered under.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct PJRT_FFI_UserData {
    pub type_id: i64,
    pub data: *mut c_void,
}

/// `PJRT_FFI_UserData_Add_Args`: adds a value to an execute context.
#[repr(C)]
#[derive(Debug)]
pub struct PJRT_FFI_UserData_Add_Args {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
    pub context: *mut PJRT_ExecuteContext,
    pub user_data: PJRT_FFI_UserData,
}

impl PJRT_FFI_UserData_Add_Args {
    /// 40: the end of `user_data`.
    pub const STRUCT_SIZE: usize = core::mem::offset_of!(PJRT_FFI_UserData_Add_Args, user_data)
        + core::mem::size_of::<PJRT_FFI_UserData>();
}

/// `PJRT_FFI_Extension`: the extension base, then three entry points.
#[repr(C)]
#[derive(Debug)]
pub struct PJRT_FFI_Extension {
    pub base: PJRT_Extension_Base,
    pub type_register: Option<unsafe extern "C" fn(*mut c_void) -> *mut PJRT_Error>,
    pub user_data_add:
        Option<unsafe extern "C" fn(*mut PJRT_FFI_UserData_Add_Args) -> *mut PJRT_Error>,
    pub register_handler:
        Option<unsafe extern "C" fn(*mut PJRT_FFI_Register_Handler_Args) -> *mut PJRT_Error>,
}
