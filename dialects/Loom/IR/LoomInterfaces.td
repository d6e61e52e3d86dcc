//===- LoomInterfaces.td - interfaces of the loom dialect --*- tablegen -*-===//

#ifndef LOOM_DIALECT_LOOM_IR_LOOMINTERFACES_TD
#define LOOM_DIALECT_LOOM_IR_LOOMINTERFACES_TD

include "mlir/IR/OpBase.td"

def Loom_CollectiveOpInterface : OpInterface<"CollectiveOpInterface"> {
  let cppNamespace = "::loom";
  let description = [{
    An op that communicates among the devices of a group of a mesh: the
    devices that share the caller's coordinates on every axis not in
    `getMeshAxes()`. Partitioning, cost modelling and lowering to the runtime
    ABI see every collective and point-to-point op through this interface.
  }];
  let methods = [
    InterfaceMethod<"The symbol of the loom.mesh the op communicates on.",
      "::mlir::FlatSymbolRefAttr", "getMeshAttr">,
    InterfaceMethod<"The mesh axes that make up the group.",
      "::mlir::ArrayAttr", "getMeshAxes">,
    InterfaceMethod<"Bytes this device sends for one execution, given the "
      "group size (ring algorithms; used by the cost model).",
      "int64_t", "getBytesSent", (ins "int64_t":$groupSize)>,
  ];
}

def Loom_ShardingRuleOpInterface : OpInterface<"ShardingRuleOpInterface"> {
  let cppNamespace = "::loom";
  let description = [{
    An op that can be split over a mesh describes its iteration space as a
    `loom::ShardingRule` (dialects/Loom/IR/ShardingRule.h): loops, and the
    loops each operand and result dimension is made of. The sharding planner
    enumerates strategies from it and the partitioner checks annotations
    against it. Ops without the interface are only ever replicated. Loom's
    ops get it in LoomDialect::initialize (ShardingRules.cpp); a plugin may
    attach it to its own ops with `attachInterface`.
  }];
  let methods = [
    InterfaceMethod<"The op's sharding rule; failure when the op (e.g. with "
      "these shapes) cannot be split at all.",
      "::mlir::FailureOr<::loom::ShardingRule>", "getShardingRule">,
  ];
}

#endif // LOOM_DIALECT_LOOM_IR_LOOMINTERFACES_TD
