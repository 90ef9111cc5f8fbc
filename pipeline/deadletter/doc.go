// Package deadletter builds what goes to a topic's dead-letter topic and checks that topic: a
// record's dead letter with its source headers and a group of headers per refusal, naming the entry and
// table (FromRecord; one dead letter names every entry that refused the record), a refused row whose
// record is gone as JSON (FromRow), the cut that makes one fit the topic's max.message.bytes (Fit), the producer's
// options (ProducerOptions), the start-up check that every dead-letter topic exists
// (CheckDeadLetterTopics), and the re-read of refused rows' source records (Reread).
//
// Sending, with its retries and acknowledgements, is the partition's dead-letter sender, package
// pipeline/dlsend.
//
// Concurrency: the builders are pure functions. CheckDeadLetterTopics and Reread make and close a
// Kafka client of their own per call and may run from any goroutine.
package deadletter
