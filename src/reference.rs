//! OCI references: the distribution grammar and Docker Hub normalisation.
