// Package placedcache lets an agent read its hub claims from the PlacedClaims
// in its cluster's namespace (hub/placedclaim writes them) rather than from
// a label-selected watch of every claim: the API server's watch cache
// sends a namespaced watch only its namespace's events.
//
// The agent's controllers are unchanged: NewInformer gives the manager's
// cache, for HostClaims, an informer whose list and watch are the
// PlacedClaims', each turned back into the claim it copies. The informer
// resumes its watch from the PlacedClaims' resourceVersions; Transform then
// gives each cached claim its own resourceVersion, so that the agent's
// locked patches go to the claim as it was copied.
package placedcache
