// Package rag is Weft's knowledge layer: documents and their loaders,
// splitters, the ingestion pipeline, retrievers over the embedded vector and
// keyword indexes, reciprocal rank fusion, reranking, query transforms and
// content injection — and the Augmentor hook the typed layer calls.
package rag
