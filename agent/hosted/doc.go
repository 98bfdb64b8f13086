// Package hosted gives an agent that runs outside its managed cluster (OCM
// Hosted mode) a least-privilege identity there. Given a cluster-admin
// bootstrap kubeconfig (the klusterlet's external managed kubeconfig), it
// creates once a hostfleetv1alpha1.AgentServiceAccount, a ClusterRole and Role with exactly the
// agent's needs, and their bindings; mints a TokenRequest token for the
// hostfleetv1alpha1.AgentServiceAccount; and from then on works only with that token, which it
// renews itself before expiry (the hostfleetv1alpha1.AgentServiceAccount may create tokens for
// itself and nothing else). The agent never keeps the bootstrap credentials.
package hosted
