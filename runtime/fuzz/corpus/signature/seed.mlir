module {
  func.func @main(%arg0: tensor<3x3xf32>, %arg1: tensor<56xui8> {customop.external = {descriptor = "my_lib::Blob", fingerprint = "0x0731d6f6ff09d648", mutable = false, name = "external", size = 56 : i64}}) -> tensor<3xi8> {
    %0 = "stablehlo.sine"(%arg0) : (tensor<3x3xf32>) -> tensor<3x3xf32>
    %1 = "stablehlo.custom_call"(%arg1, %0) {api_version = 4 : i32, backend_config = {}, call_target_name = "my_custom_library.custom_op_external", has_side_effect = true} : (tensor<56xui8>, tensor<3x3xf32>) -> tensor<3xi8>
    %2 = "stablehlo.constant"() {value = dense<1> : tensor<3xi8>} : () -> tensor<3xi8>
    %3 = "stablehlo.add"(%1, %2) : (tensor<3xi8>, tensor<3xi8>) -> tensor<3xi8>
    return %3 : tensor<3xi8>
  }
}
