// Package hardwarecopy keeps the HardwareData copies on the hub honest: a
// copy (labelled hostfleet.io/claim-uid, named after its claim) stays only
// while its claim exists, is the claim it names, and is placed on the
// cluster whose agent made the copy (label hostfleet.io/cluster). Admission
// already keeps every agent to its own cluster's copies; this removes a copy
// another cluster's agent made first under the claim's name, so that the
// owning agent can make the true one.
package hardwarecopy
